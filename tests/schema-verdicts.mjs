// The official TypeScript SDK's JSON Schema validator (ajv, with its
// formats, as the SDK builds it) asked about values: reads
// [{ "schema": {...}, "values": [string, ...] }, ...] on stdin, writes
// [[true|false, ...], ...] on stdout. Each value is read as a client reads
// an MCP argument against a typed schema: as JSON when the schema's type is
// integer, number or boolean and the whole string is a JSON number, true
// or false; as the string otherwise. Used by tests/python/test_argument_schemas.py.
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';

const JSON_SCALAR = /^(?:-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false)$/;

function typed(schema, value) {
  const typedKind = ['integer', 'number', 'boolean'].includes(schema.type);
  return typedKind && JSON_SCALAR.test(value) ? JSON.parse(value) : value;
}

let text = '';
for await (const chunk of process.stdin) text += chunk;
const validator = new AjvJsonSchemaValidator();
const verdicts = JSON.parse(text).map(({ schema, values }) => {
  const check = validator.getValidator(schema);
  return values.map((value) => check(typed(schema, value)).valid);
});
process.stdout.write(JSON.stringify(verdicts));
