// Generates api.ts from openapi.json in each directory given, with
// openapi-typescript's defaults, as its command line would: one process
// for all of them (node's start-up and the module load are most of a
// small run).
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import openapiTS, { astToString, COMMENT_HEADER } from "openapi-typescript";

for (const dir of process.argv.slice(2)) {
  const ast = await openapiTS(pathToFileURL(path.resolve(dir, "openapi.json")));
  fs.writeFileSync(path.join(dir, "api.ts"), COMMENT_HEADER + astToString(ast));
}
