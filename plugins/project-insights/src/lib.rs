//! `analyze-project`: the MCP prompt guide's multi-resource workflow, served
//! as written. The reply embeds the recent lines of the application's logs
//! and the code file named by `fileUri`, each as a `resource`, read from the
//! folders the operator grants the pack (WIT 0.3):
//!
//! ```toml
//! [plugins.project_insights.grants.folders]
//! logs = "/var/log/app"        # its *.log files: the lines of the timeframe
//! project = "/srv/app"         # fileUri file:///src/app.py is /srv/app/src/app.py
//! ```
//!
//! Where a folder is not granted, the reply links to what it would have
//! embedded, for the client to attach. The host checks both arguments
//! before the pack runs (`timeframe` one of five choices, which it also
//! completes; `fileUri` a `file:` URI), so the pack checks neither.

use std::io::{Read, Seek, SeekFrom};
use std::time::{SystemTime, UNIX_EPOCH};

use prompt_pack::v0_3::*;

const CHECKLIST_URI: &str = "prompt-pack://project-insights/checklist.md";

const CHECKLIST: &str = "\
# Project analysis checklist
1. Errors and warnings in the logs: what fails, how often, since when.
2. Stack traces that point into the code file.
3. Unhandled error paths, retries without limits, resources never released.
4. Inputs trusted without validation.
5. For every finding: the evidence, the likely cause, and a proposed fix.
";

/// The timeframes, with their length in seconds.
const TIMEFRAMES: &[(&str, u64)] = &[("15m", 900), ("1h", 3600), ("6h", 6 * 3600), ("24h", 24 * 3600), ("7d", 7 * 24 * 3600)];

/// The most of each log file read: its end.
const LOG_TAIL_BYTES: u64 = 64 << 10;
/// The most log lines embedded, the latest.
const MAX_LOG_LINES: usize = 200;
/// The largest code file embedded.
const MAX_CODE_BYTES: u64 = 256 << 10;

struct ProjectInsights;

impl Guest for ProjectInsights {
    fn describe_pack() -> PackInfo {
        PackInfo::from(prompt_pack::cargo_pack_info!())
            .folder("logs", "the application's log files (*.log): the lines of the chosen timeframe are embedded")
            .folder("project", "the project's source: the file fileUri names is embedded")
    }

    fn list_prompts() -> Vec<Prompt> {
        let timeframes: Vec<&str> = TIMEFRAMES.iter().map(|(name, _)| *name).collect();
        vec![
            prompt("analyze-project", "Analyze project logs and code")
                .title("Analyze Project")
                .argument(required("timeframe", "Time period to analyze logs").choice(timeframes))
                .argument(
                    required("fileUri", "URI of the code file to analyze, within the project")
                        .uri(["file"])
                        .example("file:///src/app.py"),
                ),
        ]
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, _input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        if name != "analyze-project" {
            return Err(PromptError::NotFound);
        }
        let arguments = Arguments::from(arguments);
        let timeframe = arguments.require("timeframe")?;
        let file_uri = arguments.require("fileUri")?;
        let seconds = TIMEFRAMES.iter().find(|(name, _)| *name == timeframe).map_or(3600, |(_, seconds)| *seconds);
        let logs = match granted("/logs") {
            true => text_resource(format!("logs://recent?timeframe={timeframe}"), "text/plain", recent_lines(seconds)?),
            false => resource_link(format!("logs://recent?timeframe={timeframe}"), "recent-logs", "System logs of the chosen timeframe"),
        };
        let code = match granted("/project") {
            true => code_file(file_uri)?,
            false => resource_link(file_uri, "code-file", "The code file to analyze"),
        };
        Ok(reply([
            user_text("Analyze these system logs and the code file for any issues:"),
            message(Role::User, logs),
            message(Role::User, code),
            message(Role::User, text_resource(CHECKLIST_URI, "text/markdown", CHECKLIST)),
        ])
        .into())
    }

    fn complete(_prompt: String, _argument: String, _value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        // The host completes `timeframe` from its choices.
        Ok(no_completions())
    }
}

/// Whether the operator granted the folder: looking at a folder the pack
/// asked for and was not granted fails, without failing the call.
fn granted(folder: &str) -> bool {
    std::fs::metadata(folder).is_ok()
}

fn failed(what: &str, error: std::io::Error) -> PromptError {
    PromptError::Internal(format!("{what}: {error}"))
}

/// The lines of the `*.log` files in `/logs` stamped within the last
/// `seconds` (each line starting with an RFC 3339 time, as
/// `2026-11-27T21:30:00Z`), from the end of each file, at most
/// [`MAX_LOG_LINES`], oldest first; a file whose lines carry no time gives
/// its last lines.
fn recent_lines(seconds: u64) -> Result<String, PromptError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |now| now.as_secs());
    let mut names: Vec<String> = std::fs::read_dir("/logs")
        .map_err(|error| failed("listing /logs", error))?
        .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
        .filter(|name| name.ends_with(".log"))
        .collect();
    names.sort();
    let mut lines = Vec::new();
    for name in names {
        let tail = tail(&format!("/logs/{name}")).map_err(|error| failed(&format!("reading /logs/{name}"), error))?;
        let stamped = tail.lines().filter_map(|line| stamp(line).map(|time| (time, line)));
        let recent: Vec<String> = stamped.filter(|(time, _)| now.saturating_sub(*time) <= seconds).map(|(_, line)| format!("{name}: {line}")).collect();
        if recent.is_empty() && tail.lines().all(|line| stamp(line).is_none()) {
            lines.extend(tail.lines().map(|line| format!("{name}: {line}")));
        } else {
            lines.extend(recent);
        }
    }
    let skip = lines.len().saturating_sub(MAX_LOG_LINES);
    match lines.len() {
        0 => Ok("(no log lines in this timeframe)".to_string()),
        _ => Ok(lines[skip..].join("\n")),
    }
}

/// The last [`LOG_TAIL_BYTES`] of a file, from its first whole line.
fn tail(path: &str) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let length = file.metadata()?.len();
    let start = length.saturating_sub(LOG_TAIL_BYTES);
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::new();
    file.take(LOG_TAIL_BYTES).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(match (start, text.find('\n')) {
        (0, _) | (_, None) => text,
        (_, Some(newline)) => text[newline + 1..].to_string(),
    })
}

/// The time a log line starts with (`YYYY-MM-DDTHH:MM:SS`, then anything),
/// in seconds since the UNIX epoch, read as UTC.
fn stamp(line: &str) -> Option<u64> {
    let bytes = line.as_bytes();
    if bytes.len() < 19 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b' ') || bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let number = |range: std::ops::Range<usize>| line.get(range)?.parse::<i64>().ok();
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    // Days from 1970-01-01 to the date (Howard Hinnant's days_from_civil).
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let day_of_year = (153 * (month + if month > 2 { -3 } else { 9 }) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = era * 146_097 + day_of_era - 719_468;
    u64::try_from(days * 86_400 + hour * 3600 + minute * 60 + second).ok()
}

/// The code file `file_uri` names, inside the project folder
/// (`file:///src/app.py` is `/project/src/app.py`), as a resource.
fn code_file(file_uri: &str) -> Result<Content, PromptError> {
    let path = file_uri.strip_prefix("file://").and_then(|rest| rest.find('/').map(|slash| &rest[slash..])).unwrap_or("/");
    let path = percent_decode(path);
    let inside = format!("/project{path}");
    let refuse = |why: String| PromptError::InvalidArguments(format!("fileUri '{file_uri}' {why}"));
    let metadata = std::fs::metadata(&inside).map_err(|error| refuse(format!("names no file in the project folder ({error})")))?;
    if !metadata.is_file() {
        return Err(refuse("is not a file".to_string()));
    }
    if metadata.len() > MAX_CODE_BYTES {
        return Err(refuse(format!("is {} bytes, more than the {MAX_CODE_BYTES} this prompt embeds", metadata.len())));
    }
    let bytes = std::fs::read(&inside).map_err(|error| failed(&format!("reading {path}"), error))?;
    let text = String::from_utf8(bytes).map_err(|_| refuse("is not UTF-8 text".to_string()))?;
    Ok(text_resource(file_uri, mime_type(&path), text))
}

/// `%XX` escapes decoded (invalid ones kept as written).
fn percent_decode(path: &str) -> String {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes.get(at + 1..at + 3).and_then(|hex| std::str::from_utf8(hex).ok()).and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The MIME type of a code file, by its extension.
fn mime_type(path: &str) -> &'static str {
    match path.rsplit_once('.').map(|(_, extension)| extension) {
        Some("py") => "text/x-python",
        Some("rs") => "text/x-rust",
        Some("js" | "mjs") => "text/javascript",
        Some("ts") => "text/x-typescript",
        Some("go") => "text/x-go",
        Some("java") => "text/x-java",
        Some("c" | "h") => "text/x-c",
        Some("md") => "text/markdown",
        Some("json") => "application/json",
        Some("toml") => "application/toml",
        _ => "text/plain",
    }
}

prompt_pack::v0_3::export_pack!(ProjectInsights);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_stamps_are_read_as_utc_seconds() {
        assert_eq!(stamp("1970-01-01T00:00:00Z start"), Some(0));
        assert_eq!(stamp("2026-11-27T21:30:00Z ERROR boom"), Some(1_795_815_000));
        assert_eq!(stamp("2000-03-01 00:00:01 x"), Some(951_868_801));
        assert_eq!(stamp("no time here"), None);
    }

    #[test]
    fn uris_become_paths_inside_the_project() {
        assert_eq!(percent_decode("/src/my%20app.py"), "/src/my app.py");
        assert_eq!(percent_decode("/a%zz"), "/a%zz");
        assert_eq!(mime_type("/src/app.py"), "text/x-python");
    }
}
