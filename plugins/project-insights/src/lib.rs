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
//!
//! It is a WIT 0.4 pack that carries, beside its prompt, the skill
//! `analyze-project` (its `skills/` folder, embedded when it is built), for
//! agents that load skills rather than show prompts, and the checklist its
//! reply embeds as a static resource, which a client can read back with
//! `resources/read`.

use std::io::{Read, Seek, SeekFrom};
use std::time::{SystemTime, UNIX_EPOCH};

use prompt_pack::v0_4::*;

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
const LOG_TAIL_BYTES: u64 = 32 << 10;
/// How many log files are read: the most recently written.
const MAX_LOG_FILES: usize = 8;
/// The most log records (a stamped line and the lines after it) embedded, the latest.
const MAX_LOG_RECORDS: usize = 200;
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
                    required("fileUri", "URI of the code file to analyze, within the project").uri(["file"]).example("file:///src/app.py"),
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

/// The log records of the [`MAX_LOG_FILES`] `*.log` files in `/logs`
/// written last, stamped within the last `seconds`, latest last: a record
/// is a line starting with an RFC 3339 time (`2026-11-27T21:30:00Z`, with
/// a fraction or an offset or neither: no offset is read as UTC) and the
/// lines after it (a stack trace). A file whose lines carry no time gives
/// its last lines, as of when it was written. Within the default budgets
/// of a grant: 8 files of at most 32 KiB each; a folder of more entries
/// than `grant_dir_entries` needs that budget raised.
fn recent_lines(seconds: u64) -> Result<String, PromptError> {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |now| now.as_secs());
    let mut files: Vec<(u64, String)> = std::fs::read_dir("/logs")
        .map_err(|error| failed("listing /logs", error))?
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let name = entry.file_name().into_string().ok()?;
            let metadata = entry.metadata().ok().filter(|metadata| metadata.is_file())?;
            let written = metadata.modified().ok()?.duration_since(UNIX_EPOCH).map_or(0, |time| time.as_secs());
            name.to_ascii_lowercase().ends_with(".log").then_some((written, name))
        })
        .collect();
    files.sort_by(|a, b| b.cmp(a));
    files.truncate(MAX_LOG_FILES);
    let mut records: Vec<(u64, String)> = Vec::new();
    for (written, name) in files {
        let Ok(tail) = tail(&format!("/logs/{name}")) else { continue };
        records.extend(log_records(&name, &tail, written).into_iter().filter(|(time, _)| now.saturating_sub(*time) <= seconds));
    }
    records.sort_by_key(|(time, _)| *time);
    let skip = records.len().saturating_sub(MAX_LOG_RECORDS);
    let lines: Vec<String> = records.into_iter().skip(skip).map(|(_, record)| record).collect();
    match lines.is_empty() {
        true => Ok("(no log lines in this timeframe)".to_string()),
        false => Ok(lines.join("\n")),
    }
}

/// The records of one file's `text`, each with its time: a stamped line
/// with the unstamped lines after it; with no stamp at all, its last 50
/// lines at the time the file was `written`.
fn log_records(name: &str, text: &str, written: u64) -> Vec<(u64, String)> {
    let mut records: Vec<(u64, String)> = Vec::new();
    for line in text.lines() {
        match (stamp(line), records.last_mut()) {
            (Some(time), _) => records.push((time, format!("{name}: {line}"))),
            (None, Some((_, record))) => {
                record.push('\n');
                record.push_str(line);
            }
            // Before the first stamp of the tail: the end of a record cut off.
            (None, None) => {}
        }
    }
    if records.is_empty() {
        let lines: Vec<&str> = text.lines().collect();
        let last = &lines[lines.len().saturating_sub(50)..];
        return last.iter().map(|line| (written, format!("{name}: {line}"))).collect();
    }
    records
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

/// The time a log line starts with (`YYYY-MM-DDTHH:MM:SS`, then an optional
/// fraction, then `Z`, an offset `+HH:MM` or `-HHMM`, or nothing, read as
/// UTC), in seconds since the UNIX epoch.
fn stamp(line: &str) -> Option<u64> {
    let bytes = line.as_bytes();
    if bytes.len() < 19
        || bytes[4] != b'-'
        || bytes[7] != b'-'
        || !matches!(bytes[10], b'T' | b't' | b' ')
        || bytes[13] != b':'
        || bytes[16] != b':'
    {
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
    let local = days * 86_400 + hour * 3600 + minute * 60 + second;
    // After the seconds: a fraction, then the offset from UTC, if any.
    let rest = &line[19..];
    let rest = rest.strip_prefix(['.', ',']).map_or(rest, |fraction| fraction.trim_start_matches(|c: char| c.is_ascii_digit()));
    let offset = match rest.as_bytes().first() {
        Some(b'+' | b'-') => {
            let digits: String = rest[1..].chars().filter(|c| *c != ':').take(4).collect();
            let hours = digits.get(0..2)?.parse::<i64>().ok()?;
            let minutes = digits.get(2..4).and_then(|minutes| minutes.parse::<i64>().ok()).unwrap_or(0);
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
        _ => 0,
    };
    u64::try_from(local - offset).ok()
}

/// The code file `file_uri` names, inside the project folder
/// (`file:///src/app.py` is `/project/src/app.py`), as a resource.
fn code_file(file_uri: &str) -> Result<Content, PromptError> {
    let path = percent_decode(&uri_path(file_uri));
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

/// The path of a `file:` URI (the host checked the scheme, in any case):
/// after `//` and an authority if there are, before any `?` or `#`.
fn uri_path(file_uri: &str) -> String {
    let rest = file_uri.split_once(':').map_or("", |(_, rest)| rest);
    let rest = match rest.strip_prefix("//") {
        Some(authority_and_path) => authority_and_path.find('/').map_or("", |slash| &authority_and_path[slash..]),
        None => rest,
    };
    let path = rest.split(['?', '#']).next().unwrap_or("");
    if path.starts_with('/') { path.to_string() } else { format!("/{path}") }
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
    let extension = path.rsplit_once('.').map(|(_, extension)| extension.to_ascii_lowercase());
    match extension.as_deref() {
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

impl Carries for ProjectInsights {
    fn skills() -> Vec<SkillFile> {
        prompt_pack::v0_4::include_skills!()
    }

    fn static_resources() -> Vec<StaticResource> {
        let mut checklist = text_static_resource(CHECKLIST_URI, "checklist.md", "text/markdown", CHECKLIST);
        checklist.title = Some("Project analysis checklist".to_string());
        vec![checklist]
    }
}

prompt_pack::v0_4::export_pack!(ProjectInsights);

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
    fn offsets_and_fractions_are_read() {
        assert_eq!(stamp("2026-11-27T22:30:00+01:00 x"), Some(1_795_815_000));
        assert_eq!(stamp("2026-11-27T16:30:00.123-0500 x"), Some(1_795_815_000));
        assert_eq!(stamp("2026-11-27 21:30:00,5 x"), Some(1_795_815_000));
    }

    #[test]
    fn a_stack_trace_stays_with_its_line() {
        let text = "cut off\n2026-11-27T21:30:00Z ERROR boom\n  at main.py:3\n2026-11-27T21:31:00Z INFO ok\n";
        assert_eq!(
            log_records("app.log", text, 0),
            [
                (1_795_815_000, "app.log: 2026-11-27T21:30:00Z ERROR boom\n  at main.py:3".to_string()),
                (1_795_815_060, "app.log: 2026-11-27T21:31:00Z INFO ok".to_string())
            ]
        );
        assert_eq!(log_records("plain.log", "a\nb\n", 7), [(7, "plain.log: a".to_string()), (7, "plain.log: b".to_string())]);
    }

    #[test]
    fn uris_become_paths_inside_the_project() {
        assert_eq!(uri_path("file:///src/app.py"), "/src/app.py");
        assert_eq!(uri_path("FILE://host/src/app.py?x=1#L10"), "/src/app.py");
        assert_eq!(uri_path("file:/src/app.py"), "/src/app.py");
        assert_eq!(mime_type("/src/APP.PY"), "text/x-python");
        assert_eq!(percent_decode("/src/my%20app.py"), "/src/my app.py");
        assert_eq!(percent_decode("/a%zz"), "/a%zz");
        assert_eq!(mime_type("/src/app.py"), "text/x-python");
    }
}
