//! The floor: a minimal hand-written newline-delimited JSON-RPC loop over
//! stdio that answers `initialize` and `prompts/get` of `code_review`, with
//! serde_json and no SDK. Nothing can serve MCP over stdio much faster.

use std::io::{BufRead, BufReader, BufWriter, Write};

use prompt_host_bench::{CODE_REVIEW_DESCRIPTION, code_review_text};
use serde_json::{Value, json};

fn main() {
    let mut stdin = BufReader::with_capacity(1 << 16, std::io::stdin().lock());
    let mut stdout = BufWriter::new(std::io::stdout().lock());
    let mut line = String::new();
    loop {
        line.clear();
        if stdin.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let Ok(request) = serde_json::from_str::<Value>(&line) else { continue };
        let Some(id) = request.get("id") else { continue };
        let result = match request["method"].as_str() {
            Some("initialize") => json!({
                "protocolVersion": request["params"]["protocolVersion"],
                "capabilities": { "prompts": {} },
                "serverInfo": { "name": "floor", "version": "0" }
            }),
            Some("prompts/get") => {
                let code = request["params"]["arguments"]["code"].as_str().unwrap_or_default();
                json!({
                    "description": CODE_REVIEW_DESCRIPTION,
                    "messages": [{ "role": "user", "content": { "type": "text", "text": code_review_text(code) } }]
                })
            }
            _ => json!({}),
        };
        serde_json::to_writer(&mut stdout, &json!({ "jsonrpc": "2.0", "id": id, "result": result })).unwrap();
        stdout.write_all(b"\n").unwrap();
        // Write out once the requests read so far are answered, so that a
        // burst of requests gets its responses in few writes.
        if stdin.buffer().is_empty() {
            stdout.flush().unwrap();
        }
    }
}
