// Writes skills.js from the skills/ folder: every file in it (hidden ones,
// whose names start with ".", left out), as prompt-pack.js's skill files,
// for pack({ skills }). npm runs it before each build and each test
// (package.json's prebuild and pretest): a pack reads no file when the host
// calls it, so the bytes are built into the pack.
//
//   node embed-skills.mjs [FOLDER] [OUTPUT]   (skills, skills.js by default)
//
// A symlink to a folder, or anything but a regular file or a folder (a
// FIFO, a socket), stops the build, naming it; a symlink to a file is read
// as the file. With no folder at all, the pack carries no skills, and this
// says so.
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [folder = "skills", output = "skills.js"] = process.argv.slice(2);

// Paths relative to the folder, "/"-separated whatever the machine.
function filesBeneath(directory, prefix) {
  return readdirSync(directory)
    .filter((name) => !name.startsWith("."))
    .flatMap((name) => {
      const [path, at] = [prefix ? `${prefix}/${name}` : name, join(directory, name)];
      const kind = statSync(at);
      if (kind.isDirectory() && lstatSync(at).isSymbolicLink()) {
        throw new Error(`embed-skills: ${at} is a symlink to a folder: copy the folder in`);
      }
      if (kind.isDirectory()) {
        return filesBeneath(at, path);
      }
      if (!kind.isFile()) {
        throw new Error(`embed-skills: ${at} is not a regular file`);
      }
      return [path];
    });
}

if (!existsSync(folder)) {
  console.error(`embed-skills: there is no folder ${folder}/: the pack carries no skills`);
}
// Sorted by bytes, as the Rust SDK and the Python library sort them.
const paths = existsSync(folder) ? filesBeneath(folder, "").sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b))) : [];
const entries = paths.map((path) => `  skillFile(${JSON.stringify(path)}, [${[...readFileSync(join(folder, path))].join(", ")}]),`);
writeFileSync(
  output,
  `// Written by embed-skills.mjs from ${folder}/ before each build and test: edit the folder, not this file.\n` +
    `import { skillFile } from "./prompt-pack.js";\n\nexport default [\n${entries.join("\n")}${entries.length ? "\n" : ""}];\n`,
);
