// Workaround for jco 1.35.0: @bytecodealliance/preview2-shim 0.25 and later
// no longer preopen "/" by default, so the WebAssembly tools jco runs inside
// Node (wasm-tools, componentize-js's splicer) cannot read the WIT files.
// Preloaded with `node --import`, this gives every installed copy of the shim
// the root directory back. Build-time only: it concerns the build tools, not
// the packs, which the host sandboxes.
import { existsSync } from "node:fs";
import { pathToFileURL } from "node:url";

const copies = [
  "node_modules/@bytecodealliance/preview2-shim",
  "node_modules/@bytecodealliance/jco/node_modules/@bytecodealliance/preview2-shim",
  "node_modules/@bytecodealliance/jco-transpile/node_modules/@bytecodealliance/preview2-shim",
];
for (const copy of copies) {
  const file = `${process.cwd()}/${copy}/dist/nodejs/filesystem.js`;
  if (existsSync(file)) {
    const { _addPreopen } = await import(pathToFileURL(file).href);
    _addPreopen("/", "/");
  }
}
