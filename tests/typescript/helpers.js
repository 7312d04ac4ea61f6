// Shared by the end-to-end tests: where things are, and small client chores.
import { copyFileSync, renameSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

export const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
export const binary = process.env.PROMPT_HOST_BIN ?? path.join(root, "target/debug/prompt-host");

/** The path of a pack built from plugins/, by crate file name. */
export const built = (name) => path.join(root, "plugins/target/wasm32-wasip2/release", `${name}.wasm`);

/** Installs a built pack the way operators should: copy beside, then rename over. */
export function install(dir, plugin, fileName = `${plugin}.wasm`) {
  const staging = path.join(dir, `.${fileName}.partial`);
  copyFileSync(built(plugin), staging);
  renameSync(staging, path.join(dir, fileName));
}

/** Every prompt name, walking all pages of prompts/list. */
export async function allNames(client) {
  const names = [];
  let cursor;
  do {
    const page = await client.listPrompts(cursor ? { cursor } : {});
    names.push(...page.prompts.map((prompt) => prompt.name));
    cursor = page.nextCursor;
  } while (cursor);
  return names;
}
