// Writes skills.js from the skills/ folder: every file in it (hidden ones,
// whose names start with ".", left out), as prompt-pack.js's skill files,
// for pack({ skills }). npm runs it before each build and each test
// (package.json's prebuild and pretest): a pack reads no file when the host
// calls it, so the bytes are built into the pack.
//
//   node embed-skills.mjs [FOLDER] [OUTPUT]   (skills, skills.js by default)
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [folder = "skills", output = "skills.js"] = process.argv.slice(2);

// Paths relative to the folder, "/"-separated whatever the machine.
function filesBeneath(directory, prefix) {
  return readdirSync(directory, { withFileTypes: true })
    .filter((entry) => !entry.name.startsWith("."))
    .flatMap((entry) => {
      const path = prefix ? `${prefix}/${entry.name}` : entry.name;
      return entry.isDirectory() ? filesBeneath(join(directory, entry.name), path) : [path];
    });
}

// Sorted by bytes, as the Rust SDK and the Python library sort them.
const paths = existsSync(folder) ? filesBeneath(folder, "").sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))) : [];
const entries = paths.map((path) => `  skillFile(${JSON.stringify(path)}, [${[...readFileSync(join(folder, path))].join(", ")}]),`);
writeFileSync(
  output,
  `// Written by embed-skills.mjs from ${folder}/ before each build and test: edit the folder, not this file.\n` +
    `import { skillFile } from "./prompt-pack.js";\n\nexport default [\n${entries.join("\n")}${entries.length ? "\n" : ""}];\n`,
);
