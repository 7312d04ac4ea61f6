//! Benchmark fixture: a WIT 0.4 pack carrying 100 skills, `skill-00` to
//! `skill-99`, each a `SKILL.md` and `references/data.md` of exactly 4 KiB,
//! beside one prompt, for `skills/list` and `resources/read` against
//! `prompts/list` (bench, section `skills`).

use prompt_pack::v0_4::*;

struct BenchSkills;

impl TemplatePack for BenchSkills {
    fn templates() -> Vec<Template> {
        vec![template("skilled", "A prompt beside a hundred skills").user("Hello")]
    }
}

impl DescribePack for BenchSkills {
    fn describe() -> PackInfo {
        prompt_pack::cargo_pack_info!().into()
    }
}

impl Carries for BenchSkills {
    fn skills() -> Vec<SkillFile> {
        let data = "0123456789abcdef".repeat(256);
        (0..100)
            .flat_map(|at| {
                let name = format!("skill-{at:02}");
                let skill_md = format!("---\nname: {name}\ndescription: Skill {at} of a hundred, for the benchmark\n---\nRead references/data.md.\n");
                [skill_file(&format!("{name}/SKILL.md"), skill_md), skill_file(&format!("{name}/references/data.md"), data.clone())]
            })
            .collect()
    }
}

prompt_pack::v0_4::export_pack!(BenchSkills);
