// Generates generated/schema.d.ts from a live promptgate's /openapi.json with openapi-typescript's
// default options, exactly as a user would: `npx openapi-typescript http://.../openapi.json`.
import fs from "node:fs";
import openapiTS, { astToString } from "openapi-typescript";

const [base] = process.argv.slice(2);
const ast = await openapiTS(new URL("/openapi.json", base));
fs.mkdirSync("generated", { recursive: true });
fs.writeFileSync("generated/schema.d.ts", astToString(ast));
console.log(JSON.stringify({ generated: "generated/schema.d.ts" }));
