//! Test fixture: a WIT 0.4 pack with one prompt and the skill
//! `release-notes` (its `SKILL.md`, a script and a PNG, embedded from
//! `skills/` with `include_skills!`), which the tests hot-add beside
//! `project_insights` and whose every file they read back by digest.

use prompt_pack::v0_4::*;

struct ReleaseSkills;

impl TemplatePack for ReleaseSkills {
    fn templates() -> Vec<Template> {
        vec![
            template("release_notes", "Drafts release notes")
                .argument(required("changes", "The changes"))
                .user("Draft release notes:\n{changes}"),
        ]
    }
}

impl DescribePack for ReleaseSkills {
    fn describe() -> PackInfo {
        prompt_pack::cargo_pack_info!().into()
    }
}

impl Carries for ReleaseSkills {
    fn skills() -> Vec<SkillFile> {
        prompt_pack::v0_4::include_skills!()
    }
}

prompt_pack::v0_4::export_pack!(ReleaseSkills);
