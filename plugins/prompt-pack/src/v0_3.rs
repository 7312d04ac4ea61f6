//! Everything a pack targeting WIT 0.3 needs: `use prompt_pack::v0_3::*;`.
//! The same types and helpers as 0.2, except that prompts and their
//! arguments are 0.3's, which may declare a **kind** the host checks before
//! the pack runs, and that the pack says what it asks to see of the
//! machine ([`PackInfo::folder`], [`PackInfo::env`]), which the operator
//! may grant.
//!
//! Each kind is one call on an argument:
//!
//! ```
//! use prompt_pack::v0_3::*;
//!
//! let tone = optional("tone", "How it should sound").choice(["formal", "casual"]).default("formal");
//! let count = required("count", "How many").integer(Some(1), Some(10)).example("3");
//! let source = required("fileUri", "The file").uri(["file"]);
//! assert_eq!(tone.kind, Some(ArgumentKind::Choice(vec!["formal".into(), "casual".into()])));
//! assert_eq!(count.kind, Some(ArgumentKind::Integer(IntegerKind { min: Some(1), max: Some(10) })));
//! assert_eq!(source.kind, Some(ArgumentKind::Uri(UriKind { schemes: vec!["file".into()] })));
//! ```
//!
//! Templates ([`TemplatePack`]) work on 0.3 too: their
//! [`choices`](Template::choices) and [`default`](Template::default)s, and
//! any kind an argument declares, are listed for the host to check,
//! complete and hint at. Exported with the prompts whose missing required
//! arguments the host asks the user for (WIT 0.3.1), the text below is
//! asked for with a form when a client leaves it out:
//!
//! ```
//! use prompt_pack::v0_3::*;
//!
//! struct Summaries;
//!
//! impl TemplatePack for Summaries {
//!     fn templates() -> Vec<Template> {
//!         vec![
//!             template("summarize", "Asks for a summary of a text")
//!                 .argument(required("text", "The text to summarize"))
//!                 .argument(optional("length", "How long").choice(["short", "long"]).default("short"))
//!                 .user("Write a {length} summary of this text:\n\n{text}"),
//!         ]
//!     }
//! }
//!
//! impl DescribePack for Summaries {
//!     fn describe() -> PackInfo {
//!         prompt_pack::cargo_pack_info!().into()
//!     }
//! }
//!
//! prompt_pack::v0_3::export_pack!(Summaries, asks_for_missing = ["summarize"]);
//!
//! let listed = <Summaries as Guest>::list_prompts();
//! assert_eq!(listed[0].arguments[1].kind, Some(ArgumentKind::Choice(vec!["short".into(), "long".into()])));
//! assert_eq!(listed[0].arguments[1].default.as_deref(), Some("short"));
//! assert_eq!(<Summaries as AskingGuest>::prompts_that_ask(), ["summarize"]);
//! // The host passes the default, and the text the user typed into its form:
//! let arguments = vec![argument("text", "Hi."), argument("length", "short")];
//! let answer = <Summaries as Guest>::get_prompt("summarize".into(), arguments, None).unwrap();
//! assert_eq!(answer.into_reply().unwrap().messages, [user_text("Write a short summary of this text:\n\nHi.")]);
//! ```
//!
//! The host refuses a value that is not of its argument's kind with
//! -32602, and the pack is not called; it fills in defaults; it answers
//! completions of choices and booleans itself, so `complete` sees only the
//! other arguments. A pack reads a granted folder `/logs` with
//! `std::fs`; `std::fs::metadata("/logs")` fails (`PermissionDenied`)
//! without failing the call when the operator did not grant it, so a pack
//! can do without; any read beneath a folder not granted fails the call,
//! naming the config key that would grant it.

pub use crate::*;

pub use crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::{
    ArgumentKind, Guest, IntegerKind, NumberKind, PackInfo, Prompt, PromptArgument, TextKind, UriKind, WantedFolder, Wants,
};

/// What a pack of templates says it is, in WIT 0.3, and what it asks to see
/// of the machine: implement it beside [`TemplatePack`] and the SDK
/// implements the 0.3 [`Guest`] for the type. Usually
/// `prompt_pack::cargo_pack_info!().into()`, with `.folder(...)`,
/// `.origin(...)` or `.env(...)` after it for what the pack asks to see.
pub trait DescribePack {
    /// The pack's name, version and the rest, and what it wants.
    fn describe() -> PackInfo;
}

/// The `asking` interface of WIT 0.3.1, which [`export_pack!`] implements
/// from the prompts it is given.
pub use crate::bindings_v0_3::exports::prompt_host::prompts::asking::Guest as AskingGuest;

/// Exports a type implementing the 0.3 [`Guest`] as the pack's
/// `prompt-provider`, WIT 0.3: `export_pack!(Pack);`.
///
/// To have the host ask the user for the missing required arguments of
/// some prompts (WIT 0.3.1's `asking`), name them:
/// `export_pack!(Pack, asks_for_missing = ["announce"]);`. When a request
/// for one of them leaves required arguments out and the client can show
/// forms, the host asks for them with a form built from their kinds, checks
/// the answers, and calls `get_prompt` with them among the arguments, as if
/// the client had passed them; a client that cannot show forms gets -32602,
/// as for every other prompt.
pub use crate::__export_pack_v0_3 as export_pack;

#[doc(hidden)]
#[macro_export]
macro_rules! __export_pack_v0_3 {
    ($pack:ident) => {
        $crate::__export_pack_v0_3!($pack, asks_for_missing = []);
    };
    ($pack:ident, asks_for_missing = [$($prompt:expr),* $(,)?]) => {
        impl $crate::bindings_v0_3::exports::prompt_host::prompts::asking::Guest for $pack {
            fn prompts_that_ask() -> ::std::vec::Vec<::std::string::String> {
                ::std::vec![$(::std::string::ToString::to_string(&$prompt)),*]
            }
        }
        $crate::bindings_v0_3::export_pack_v0_3!($pack);
    };
}

prompt_builder!(Prompt, PromptArgument);

/// Declares an argument a client must pass, of any text until a kind is set.
pub fn required(name: &str, description: &str) -> PromptArgument {
    PromptArgument {
        name: name.to_string(),
        title: None,
        description: Some(description.to_string()),
        required: true,
        kind: None,
        default: None,
        examples: Vec::new(),
    }
}

/// Declares an argument a client may leave out.
pub fn optional(name: &str, description: &str) -> PromptArgument {
    PromptArgument { required: false, ..required(name, description) }
}

impl PromptArgument {
    /// Sets the human-readable title.
    pub fn title(mut self, title: &str) -> Self {
        self.title = Some(title.to_string());
        self
    }

    /// One of these choices, exactly (the host completes them).
    pub fn choice<S: Into<String>>(mut self, choices: impl IntoIterator<Item = S>) -> Self {
        self.kind = Some(ArgumentKind::Choice(choices.into_iter().map(Into::into).collect()));
        self
    }

    /// `true` or `false` (the host completes it).
    pub fn boolean(mut self) -> Self {
        self.kind = Some(ArgumentKind::Boolean);
        self
    }

    /// A whole number, within these bounds (each inclusive, none for no bound).
    pub fn integer(mut self, min: Option<i64>, max: Option<i64>) -> Self {
        self.kind = Some(ArgumentKind::Integer(IntegerKind { min, max }));
        self
    }

    /// A number, within these bounds (each inclusive and finite).
    pub fn number(mut self, min: Option<f64>, max: Option<f64>) -> Self {
        self.kind = Some(ArgumentKind::Number(NumberKind { min, max }));
        self
    }

    /// Text of at most `max_length` characters, matching `pattern` whole
    /// (Rust `regex` syntax), each optional.
    pub fn text(mut self, max_length: Option<u32>, pattern: Option<&str>) -> Self {
        self.kind = Some(ArgumentKind::Text(TextKind { max_length, pattern: pattern.map(str::to_string) }));
        self
    }

    /// An absolute URI of one of these schemes (none given: any scheme).
    pub fn uri<S: Into<String>>(mut self, schemes: impl IntoIterator<Item = S>) -> Self {
        self.kind = Some(ArgumentKind::Uri(UriKind { schemes: schemes.into_iter().map(Into::into).collect() }));
        self
    }

    /// The value the host passes when the client gives none (of the
    /// argument's kind): the argument is then never missing.
    pub fn default(mut self, value: &str) -> Self {
        self.default = Some(value.to_string());
        self
    }

    /// An example value, shown to clients in the argument's schema.
    pub fn example(mut self, value: &str) -> Self {
        self.examples.push(value.to_string());
        self
    }
}

impl From<crate::PackInfo> for PackInfo {
    /// A 0.2 pack info (such as [`cargo_pack_info!`](crate::cargo_pack_info)
    /// makes) that asks to see nothing.
    fn from(info: crate::PackInfo) -> Self {
        PackInfo {
            name: info.name,
            version: info.version,
            description: info.description,
            authors: info.authors,
            license: info.license,
            homepage: info.homepage,
            repository: info.repository,
            wants: Wants::nothing(),
        }
    }
}

impl PackInfo {
    /// Asks to read a folder, which the pack then reads as `/<name>` if
    /// the operator grants it (`[plugins.PACK.grants.folders]`), saying why.
    pub fn folder(mut self, name: &str, why: &str) -> Self {
        self.wants = self.wants.folder(name, why);
        self
    }

    /// Asks to call the HTTP origin `origin` (`https://api.example.com`,
    /// optionally with a path prefix: `https://api.example.com/v1/`)
    /// through `wasi:http/outgoing-handler`, if the operator grants it
    /// (`http = [...]` in `[plugins.PACK.grants]`).
    pub fn origin(mut self, origin: &str) -> Self {
        self.wants = self.wants.origin(origin);
        self
    }

    /// Asks to read the environment value `name` (`std::env::var`), if
    /// the operator grants it (`[plugins.PACK.grants.env]`).
    pub fn env(mut self, name: &str) -> Self {
        self.wants = self.wants.env(name);
        self
    }
}

impl Wants {
    /// Asking to see nothing.
    pub fn nothing() -> Wants {
        Wants { folders: Vec::new(), origins: Vec::new(), env: Vec::new() }
    }

    /// Asks to read a folder, as [`PackInfo::folder`].
    pub fn folder(mut self, name: &str, why: &str) -> Self {
        self.folders.push(WantedFolder { name: name.to_string(), description: Some(why.to_string()) });
        self
    }

    /// Asks to call an HTTP origin, as [`PackInfo::origin`].
    pub fn origin(mut self, origin: &str) -> Self {
        self.origins.push(origin.to_string());
        self
    }

    /// Asks to read an environment value, as [`PackInfo::env`].
    pub fn env(mut self, name: &str) -> Self {
        self.env.push(name.to_string());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_on_0_3_lists_its_choices_and_defaults_as_kinds_except_for_what_it_asks_for() {
        let listed = template("t", "")
            .argument(optional("length", "").choice(["short", "long"]).default("short"))
            .argument(optional("tone", ""))
            .choices("tone", &["calm", "loud"])
            .default("tone", "calm")
            .argument(optional("text", ""))
            .default("text", "")
            .ask_for("text", "What text?")
            .user("{length} {tone} {text}")
            .declaration_v0_3();
        let kinds: Vec<_> = listed.arguments.iter().map(|argument| (argument.kind.clone(), argument.default.clone())).collect();
        assert_eq!(
            kinds,
            [
                (Some(ArgumentKind::Choice(vec!["short".into(), "long".into()])), Some("short".into())),
                (Some(ArgumentKind::Choice(vec!["calm".into(), "loud".into()])), Some("calm".into())),
                // Asked for by the template: the host must not fill it in, or it is never asked.
                (None, None),
            ]
        );
    }

    #[test]
    fn a_pack_info_asks_for_folders_and_values_in_one_line_each() {
        let info = PackInfo::from(crate::PackInfo::from_cargo("acme", "1.0.0", "", "", "", "", ""))
            .folder("logs", "recent log lines")
            .env("API_TOKEN");
        assert_eq!(info.wants.folders, [WantedFolder { name: "logs".into(), description: Some("recent log lines".into()) }]);
        assert_eq!(info.wants.env, ["API_TOKEN"]);
        assert_eq!((info.name.as_str(), info.version.as_str()), ("acme", "1.0.0"));
    }

    #[test]
    fn kinds_defaults_and_examples_are_declared_on_the_argument() {
        let flag = optional("verbose", "Say more").boolean().default("false");
        assert_eq!((&flag.kind, &flag.default, flag.required), (&Some(ArgumentKind::Boolean), &Some("false".into()), false));
        let title = required("title", "A title").text(Some(20), Some("[A-Za-z ]+")).example("Weekly");
        assert_eq!(title.kind, Some(ArgumentKind::Text(TextKind { max_length: Some(20), pattern: Some("[A-Za-z ]+".into()) })));
        assert_eq!(title.examples, ["Weekly"]);
        let ratio = optional("ratio", "A share").number(Some(0.0), Some(1.0));
        assert_eq!(ratio.kind, Some(ArgumentKind::Number(NumberKind { min: Some(0.0), max: Some(1.0) })));
        let p = prompt("report", "Reports").title("Report").argument(flag);
        assert_eq!((p.title.as_deref(), p.arguments.len()), (Some("Report"), 1));
    }
}
