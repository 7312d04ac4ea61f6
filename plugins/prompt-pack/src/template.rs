//! Prompts declared as templates: the declaration, the messages with named
//! placeholders, defaults and allowed values, all in one place. A type that
//! implements [`TemplatePack`] is a whole pack: listing, argument checks,
//! rendering and completions come from its templates, and (in WIT 0.2 and
//! 0.3) asking the user for an argument the client left out. On 0.3 the
//! host checks, completes and fills in the templates' choices and defaults
//! before the pack runs.

use crate::{
    Argument, Arguments, Completion, DescribePack, FieldKind, FieldValue, Form, FormResponse, Guest, Icon, Input, MAX_FORMS, PackInfo,
    Prompt, PromptAnswer, PromptArgument, PromptError, PromptReply, Role, ask, complete_from, message, no_completions, prompt, text,
};

/// A pack made of templates only. Implement it and export the type with
/// [`export_pack!`](crate::export_pack) (WIT 0.1); the SDK implements
/// [`Guest`] for it. For WIT 0.2, implement [`DescribePack`] too and export
/// it with [`v0_2::export_pack!`](crate::v0_2::export_pack): the SDK
/// implements the 0.2 [`Guest`](crate::v0_2::Guest), which asks the user
/// for the arguments a template [asks for](Template::ask_for). For WIT 0.3,
/// implement [`v0_3::DescribePack`](crate::v0_3::DescribePack) and export
/// it with [`v0_3::export_pack!`](crate::v0_3::export_pack).
///
/// A 0.2 pack that asks for the text to summarize when the client gave none:
///
/// ```
/// use prompt_pack::v0_2::*;
///
/// struct Summaries;
///
/// impl TemplatePack for Summaries {
///     fn templates() -> Vec<Template> {
///         vec![
///             template("summarize", "Asks for a summary of a text")
///                 .argument(optional("text", "The text to summarize"))
///                 .ask_for("text", "What text should be summarized?")
///                 .user("Summarize this text:\n\n{text}"),
///         ]
///     }
/// }
///
/// impl DescribePack for Summaries {
///     fn describe() -> PackInfo {
///         prompt_pack::cargo_pack_info!()
///     }
/// }
///
/// prompt_pack::v0_2::export_pack!(Summaries);
///
/// // With the text, the reply:
/// let answer = Summaries::get_prompt("summarize".into(), vec![argument("text", "Hi.")], None).unwrap();
/// assert_eq!(answer.into_reply().unwrap().messages, [user_text("Summarize this text:\n\nHi.")]);
/// // Without it, a form for it; the host calls again with the answer.
/// let asked = Summaries::get_prompt("summarize".into(), vec![], None).unwrap().into_input_required().unwrap();
/// assert_eq!(asked.forms, [form("text", "What text should be summarized?").field(string_field("text", "The text to summarize"))]);
/// let input = answers([accepted("text", [("text", "Hello.")])]);
/// let answer = Summaries::get_prompt("summarize".into(), vec![], Some(input)).unwrap();
/// assert_eq!(answer.into_reply().unwrap().messages, [user_text("Summarize this text:\n\nHello.")]);
/// ```
///
/// A 0.1 pack:
///
/// ```
/// use prompt_pack::*;
///
/// struct CodeReview;
///
/// impl TemplatePack for CodeReview {
///     fn templates() -> Vec<Template> {
///         vec![
///             template("code_review", "Asks the LLM to analyze code quality and suggest improvements")
///                 .title("Request Code Review")
///                 .argument(required("code", "The code to review"))
///                 .user("Please review this Python code:\n{code}")
///                 .described("Code review prompt"),
///         ]
///     }
/// }
///
/// prompt_pack::export_pack!(CodeReview);
///
/// // What the host gets when a client asks for the prompt:
/// let reply = CodeReview::get_prompt("code_review".into(), vec![argument("code", "x = 1")]).unwrap();
/// assert_eq!(reply.messages, [user_text("Please review this Python code:\nx = 1")]);
/// assert_eq!(reply.description.as_deref(), Some("Code review prompt"));
/// // A missing argument is an invalid-arguments error naming it:
/// assert_eq!(
///     CodeReview::get_prompt("code_review".into(), vec![]),
///     Err(PromptError::InvalidArguments("missing required argument 'code'".into()))
/// );
/// ```
pub trait TemplatePack {
    /// The pack's prompts, in the order `prompts/list` shows them.
    fn templates() -> Vec<Template>;

    /// Checks the templates as the host's load does (see
    /// [`check_templates`]): call it from the pack's own tests, so that
    /// `cargo test` fails where the host would refuse the pack.
    fn check() -> Result<(), TemplateMistake> {
        check_templates(&Self::templates())
    }
}

/// A mistake in a pack's templates, and the template it is in.
#[derive(Debug, Clone, PartialEq)]
pub struct TemplateMistake {
    /// What is wrong, naming the prompt.
    pub problem: String,
    /// Where the template is declared (the call to [`template`]).
    pub at: &'static std::panic::Location<'static>,
}

impl std::fmt::Display for TemplateMistake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (at {})", self.problem, self.at)
    }
}

/// Checks every template ([`Template::check`]), and that no two prompts, and
/// no two arguments of one prompt, share a name.
pub fn check_templates(templates: &[Template]) -> Result<(), TemplateMistake> {
    for (index, template) in templates.iter().enumerate() {
        let mistake = |problem: String| TemplateMistake { problem, at: template.defined_at };
        let name = &template.declaration.name;
        if templates[..index].iter().any(|earlier| earlier.declaration.name == *name) {
            return Err(mistake(format!("prompt '{name}' is declared more than once: give each prompt a name of its own")));
        }
        let arguments = &template.declaration.arguments;
        for (position, argument) in arguments.iter().enumerate() {
            if arguments[..position].iter().any(|earlier| earlier.name == argument.name) {
                return Err(mistake(format!("template of prompt '{name}' declares argument '{}' twice", argument.name)));
            }
        }
        template.check().map_err(mistake)?;
    }
    Ok(())
}

/// One prompt: how it is declared, and the messages it replies with.
///
/// Message texts name arguments in braces: `{code}` is the value of argument
/// `code`. Write `{{` and `}}` for literal braces. An optional argument the
/// client left out is its [`default`](Template::default); a placeholder for
/// an optional argument must have one (`""` where a gap is meant), so that
/// no text reads "in a  tone" by accident.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    defined_at: &'static std::panic::Location<'static>,
    declaration: Prompt,
    messages: Vec<(Role, Block)>,
    /// A prompt written in code: the function that replies, in place of
    /// messages.
    reply_with: Option<Code<ReplyFunction>>,
    /// The function that completes its arguments, in place of its choices.
    complete_with: Option<Code<CompleteFunction>>,
    description: Option<String>,
    defaults: Vec<(String, String)>,
    choices: Vec<(String, Vec<String>)>,
    /// The arguments asked for when left out, and the message of each one's form.
    asks: Vec<(String, String)>,
    /// The arguments declared with a WIT 0.3 declaration (a kind, a
    /// default, examples), as declared: what a 0.3 pack lists for them.
    typed: Vec<crate::v0_3::PromptArgument>,
}

/// One block of a template's reply: each of its texts may name arguments.
#[derive(Debug, Clone, PartialEq)]
enum Block {
    Text(String),
    /// An embedded resource with textual contents.
    Resource {
        uri: String,
        mime_type: String,
        text: String,
    },
    /// A link to a resource the client can fetch itself.
    Link {
        uri: String,
        name: String,
    },
}

impl Block {
    /// The template texts the block fills in: where placeholders may be.
    fn texts(&self) -> Vec<&str> {
        match self {
            Block::Text(text) => vec![text],
            Block::Resource { uri, text, .. } => vec![uri, text],
            Block::Link { uri, name } => vec![uri, name],
        }
    }
}

/// What a prompt written in code is: the arguments (with defaults filled
/// in, each checked as the template declares) to its reply.
pub type ReplyFunction = fn(&Arguments) -> Result<PromptReply, PromptError>;

/// What completes a prompt's arguments in code: the argument's name and
/// what the user typed so far, to the suggestions.
pub type CompleteFunction = fn(&str, &str) -> Completion;

/// A function a template calls. Two are the same when they are the same
/// function, which keeps [`Template`] comparable in tests.
#[derive(Clone, Copy)]
struct Code<F>(F);

impl<F> std::fmt::Debug for Code<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<code>")
    }
}

// One rule for every kind of function: `fn_addr_eq` takes only function
// pointers, and the trait that names them (`FnPtr`) is unstable, so a
// generic impl cannot bound on it; the macro writes the impl for each kind.
macro_rules! same_function {
    ($($function:ty),+) => {$(
        impl PartialEq for Code<$function> {
            fn eq(&self, other: &Self) -> bool {
                std::ptr::fn_addr_eq(self.0, other.0)
            }
        }
    )+};
}

same_function!(ReplyFunction, CompleteFunction);

/// An argument a template declares: as every version lists it, and, when
/// declared with [`v0_3`](crate::v0_3)'s `required` or `optional`, with its
/// kind, default and examples, which a 0.3 pack lists and the host checks.
pub struct TemplateArgument {
    declared: PromptArgument,
    typed: Option<crate::v0_3::PromptArgument>,
}

impl From<PromptArgument> for TemplateArgument {
    fn from(declared: PromptArgument) -> TemplateArgument {
        TemplateArgument { declared, typed: None }
    }
}

impl From<crate::v0_3::PromptArgument> for TemplateArgument {
    fn from(typed: crate::v0_3::PromptArgument) -> TemplateArgument {
        let declared = PromptArgument {
            name: typed.name.clone(),
            title: typed.title.clone(),
            description: typed.description.clone(),
            required: typed.required,
        };
        TemplateArgument { declared, typed: Some(typed) }
    }
}

/// Starts a template for prompt `name`, with a description and no arguments
/// or messages yet. A mistake in it is reported at the line of this call.
#[track_caller]
pub fn template(name: &str, description: &str) -> Template {
    Template {
        defined_at: std::panic::Location::caller(),
        declaration: prompt(name, description),
        messages: Vec::new(),
        reply_with: None,
        complete_with: None,
        description: None,
        defaults: Vec::new(),
        choices: Vec::new(),
        asks: Vec::new(),
        typed: Vec::new(),
    }
}

impl Template {
    /// Sets the human-readable title.
    pub fn title(mut self, title: &str) -> Self {
        self.declaration = self.declaration.title(title);
        self
    }

    /// Declares an argument, after the ones already declared: one of any
    /// version's `required` or `optional` (0.3's may declare a kind, as
    /// `optional("tone", "...").choice(["formal", "casual"])`, which a 0.3
    /// pack lists and the host checks).
    pub fn argument(mut self, argument: impl Into<TemplateArgument>) -> Self {
        let TemplateArgument { declared, typed } = argument.into();
        self.declaration = self.declaration.argument(declared);
        // A declared default and choices are the template's too, so that
        // it renders and checks them as its own.
        if let Some(typed) = &typed {
            if let Some(default) = &typed.default {
                self.defaults.push((typed.name.clone(), default.clone()));
            }
            if let Some(crate::v0_3::ArgumentKind::Choice(choices)) = &typed.kind {
                self.choices.push((typed.name.clone(), choices.clone()));
            }
        }
        self.typed.extend(typed);
        self
    }

    /// Adds an icon.
    pub fn icon(mut self, icon: Icon) -> Self {
        self.declaration = self.declaration.icon(icon);
        self
    }

    /// Adds a user message, from a template text.
    pub fn user(mut self, text: &str) -> Self {
        self.messages.push((Role::User, Block::Text(text.to_string())));
        self
    }

    /// Adds an assistant message, from a template text.
    pub fn assistant(mut self, text: &str) -> Self {
        self.messages.push((Role::Assistant, Block::Text(text.to_string())));
        self
    }

    /// Adds a user message embedding a resource with textual contents:
    /// `.resource("file:///logs/{service}.log", "text/plain", "{logs}")`.
    /// The URI and the contents are template texts; the URI filled in must
    /// parse as a URI (the host checks it).
    pub fn resource(mut self, uri: &str, mime_type: &str, text: &str) -> Self {
        let block = Block::Resource { uri: uri.to_string(), mime_type: mime_type.to_string(), text: text.to_string() };
        self.messages.push((Role::User, block));
        self
    }

    /// Adds a user message linking to a resource the client can fetch
    /// itself: `.link("https://example.com/runbooks/{service}", "runbook")`.
    /// Both are template texts.
    pub fn link(mut self, uri: &str, name: &str) -> Self {
        self.messages.push((Role::User, Block::Link { uri: uri.to_string(), name: name.to_string() }));
        self
    }

    /// Makes this a prompt written in code: `reply` answers it, in place of
    /// messages. The declaration stays the template's, so the arguments
    /// reach `reply` checked (required ones present, choices kept) with
    /// their defaults filled in, and [`TemplatePack::check`] still checks
    /// the declaration.
    pub fn reply_with(mut self, reply: ReplyFunction) -> Self {
        self.reply_with = Some(Code(reply));
        self
    }

    /// Completes the prompt's arguments with `complete` (the argument's
    /// name and what the user typed) in place of its choices. On WIT 0.3
    /// the host completes choices and booleans itself and calls the pack
    /// for the other arguments only.
    pub fn complete_with(mut self, complete: CompleteFunction) -> Self {
        self.complete_with = Some(Code(complete));
        self
    }

    /// Sets the description the reply carries.
    pub fn described(mut self, description: &str) -> Self {
        self.description = Some(description.to_string());
        self
    }

    /// The value an optional argument takes when the client leaves it out.
    pub fn default(mut self, argument: &str, value: &str) -> Self {
        self.defaults.push((argument.to_string(), value.to_string()));
        self
    }

    /// Restricts an argument to these values: others are refused as invalid
    /// arguments, and completion offers them.
    pub fn choices(mut self, argument: &str, values: &[&str]) -> Self {
        self.choices.push((argument.to_string(), values.iter().map(|value| value.to_string()).collect()));
        self
    }

    /// Asks the user for the optional `argument` when the client leaves it
    /// out (or, when it has [`choices`](Template::choices), passes another
    /// value), with a form of one field named after it, whose key is its
    /// name and whose message is `message`. Its default, if it has one, is
    /// the value the field starts with.
    ///
    /// Only a WIT 0.2 or 0.3 pack can ask: a 0.1 pack uses the default, or
    /// refuses the request as missing the argument. The argument must be
    /// declared optional, since the host refuses a request that leaves out a
    /// required one before the pack runs. (On 0.3, the host itself can ask
    /// for required arguments left out, with a form built from their kinds:
    /// `v0_3::export_pack!(Pack, asks_for_missing = [...])`. An argument a
    /// template asks for is listed without its default and choices, so that
    /// the host leaves asking to the template.)
    pub fn ask_for(mut self, argument: &str, message: &str) -> Self {
        self.asks.push((argument.to_string(), message.to_string()));
        self
    }

    /// The prompt as `list-prompts` declares it. An optional argument with a
    /// default says it at the end of its description, `(default: short)`:
    /// neither MCP nor the WIT contract has a field for it, and clients (and
    /// `prompt-host inspect`) show the description. A description that says
    /// it already is left as it is, and so is an empty default.
    pub fn declaration(&self) -> Prompt {
        let mut prompt = self.declaration.clone();
        for argument in &mut prompt.arguments {
            let Some((_, value)) = self.defaults.iter().find(|(name, _)| *name == argument.name) else { continue };
            if value.is_empty() {
                continue;
            }
            let note = format!("(default: {value})");
            argument.description = Some(match argument.description.take() {
                Some(description) if description.contains(&note) => description,
                Some(description) if !description.trim().is_empty() => format!("{description} {note}"),
                _ => note,
            });
        }
        prompt
    }

    /// The prompt as a WIT 0.3 pack lists it: each argument with its kind
    /// (as declared, else a choice of the template's [`choices`](Template::choices))
    /// and its default (as declared, else the template's
    /// [`default`](Template::default)), which the host checks, fills in and
    /// completes, and hints at in the description it lists.
    pub fn declaration_v0_3(&self) -> crate::v0_3::Prompt {
        use crate::v0_3::{ArgumentKind, PromptArgument as Typed};
        let arguments = self
            .declaration
            .arguments
            .iter()
            .map(|argument| {
                let typed = self.typed.iter().find(|typed| typed.name == argument.name);
                // An argument the template asks for: the host must neither fill
                // in its default nor refuse another value, or it never asks.
                let asked = self.asks_for(&argument.name);
                let choices = self.choices.iter().find(|(name, _)| *name == argument.name).filter(|_| !asked);
                let default =
                    self.defaults.iter().find(|(name, _)| *name == argument.name).map(|(_, value)| value.clone()).filter(|_| !asked);
                Typed {
                    name: argument.name.clone(),
                    title: argument.title.clone(),
                    description: argument.description.clone(),
                    required: argument.required,
                    kind: typed
                        .and_then(|typed| typed.kind.clone())
                        .or_else(|| choices.map(|(_, values)| ArgumentKind::Choice(values.clone()))),
                    default: typed.and_then(|typed| typed.default.clone()).filter(|_| !asked).or(default),
                    examples: typed.map(|typed| typed.examples.clone()).unwrap_or_default(),
                }
            })
            .collect();
        let prompt = &self.declaration;
        crate::v0_3::Prompt {
            name: prompt.name.clone(),
            title: prompt.title.clone(),
            description: prompt.description.clone(),
            arguments,
            icons: prompt.icons.clone(),
        }
    }

    /// Checks that every placeholder, default and choice names a declared
    /// argument; that every resource and link URI starts with a scheme
    /// before any placeholder, a resource's media type is `type/subtype`
    /// and a link's name has text of its own; and that the template
    /// replies either with messages or in code, not both and not neither.
    /// A mistake here is the pack author's, found when the host first lists
    /// the prompts (or by [`TemplatePack::check`] in the pack's tests).
    pub fn check(&self) -> Result<(), String> {
        let declared = |name: &str| self.declaration.arguments.iter().find(|argument| argument.name == name);
        let at = format!("template of prompt '{}'", self.declaration.name);
        for text in self.messages.iter().flat_map(|(_, block)| block.texts()) {
            for piece in parse(text).map_err(|problem| format!("{at}: {problem}"))? {
                let Piece::Argument(name) = piece else { continue };
                match declared(name) {
                    None => return Err(format!("{at} uses {{{name}}}, which is not one of its arguments")),
                    Some(argument)
                        if !argument.required && !self.defaults.iter().any(|(argument, _)| argument == name) && !self.asks_for(name) =>
                    {
                        return Err(format!(
                            "{at} uses {{{name}}}, an optional argument with no default, which would leave a gap \
                             in the text when left out: give it a default (.default(\"{name}\", ...), \"\" if the \
                             gap is meant), or make it required"
                        ));
                    }
                    Some(_) => {}
                }
            }
        }
        for (name, _) in &self.defaults {
            match declared(name) {
                None => return Err(format!("{at} sets a default for '{name}', which is not one of its arguments")),
                Some(argument) if argument.required => {
                    return Err(format!("{at} sets a default for '{name}', which is required: it would never be used"));
                }
                Some(_) => {}
            }
        }
        for (name, choices) in &self.choices {
            if declared(name).is_none() {
                return Err(format!("{at} sets choices for '{name}', which is not one of its arguments"));
            }
            if choices.is_empty() {
                return Err(format!("{at} offers no choices for '{name}': give at least one"));
            }
        }
        for (position, (name, _)) in self.asks.iter().enumerate() {
            match declared(name) {
                None => return Err(format!("{at} asks for '{name}', which is not one of its arguments")),
                Some(argument) if argument.required => {
                    return Err(format!(
                        "{at} asks for '{name}', which is required: the host refuses a request without it before \
                         the pack runs, so it would never be asked; declare it optional"
                    ));
                }
                Some(_) => {}
            }
            if self.asks[..position].iter().any(|(earlier, _)| earlier == name) {
                return Err(format!("{at} asks for '{name}' twice"));
            }
        }
        if self.asks.len() > MAX_FORMS {
            return Err(format!("{at} asks for {} arguments, more than the {MAX_FORMS} forms the host takes at once", self.asks.len()));
        }
        for (name, default) in &self.defaults {
            if let Some((_, allowed)) = self.choices.iter().find(|(argument, _)| argument == name)
                && !allowed.contains(default)
            {
                return Err(format!("{at} defaults '{name}' to {default:?}, which is not one of its choices"));
            }
        }
        for (_, block) in &self.messages {
            let (uri, fixed_name) = match block {
                Block::Text(_) => continue,
                Block::Resource { uri, mime_type, .. } => {
                    if !is_media_type(mime_type) {
                        return Err(format!("{at} has the media type {mime_type:?}, which is not of the form type/subtype"));
                    }
                    (uri, true)
                }
                Block::Link { uri, name } => (uri, parse(name).unwrap_or_default().iter().any(|piece| matches!(piece, Piece::Text(_)))),
            };
            if !starts_with_scheme(uri) {
                return Err(format!(
                    "{at} has the URI {uri:?}, which does not start with a scheme (such as https: or file:) before \
                     its first placeholder: a URI must be absolute, and values are percent-encoded into it"
                ));
            }
            if !fixed_name {
                return Err(format!("{at} has a link whose name has no text of its own: an empty value would leave it without a name"));
            }
        }
        // Last, so that a mistake in the declaration is named first.
        match (self.messages.is_empty(), self.reply_with.is_some()) {
            (true, false) => Err(format!("{at} has no messages: give it one (.user(...)), or reply in code (.reply_with(...))")),
            (false, true) => Err(format!("{at} has messages and replies in code (.reply_with): its messages would never be used")),
            _ => Ok(()),
        }
    }

    /// The reply to a request with these arguments.
    pub fn render(&self, arguments: &Arguments) -> Result<PromptReply, PromptError> {
        let mut values = Vec::new();
        for declared in &self.declaration.arguments {
            let name = declared.name.as_str();
            let default = self.defaults.iter().find(|(argument, _)| argument == name).map(|(_, value)| value.as_str());
            // None: an optional argument left out with no default.
            let value = match (arguments.get(name), default) {
                (Some(value), _) => Some(value),
                (None, None) if declared.required || self.asks_for(name) => {
                    return Err(PromptError::InvalidArguments(format!("missing required argument '{name}'")));
                }
                (None, default) => default,
            };
            if let Some((_, allowed)) = self.choices.iter().find(|(argument, _)| argument == name)
                && let Some(given) = arguments.get(name)
                && !allowed.iter().any(|choice| choice == given)
            {
                return Err(PromptError::InvalidArguments(format!("argument '{name}' must be one of: {}", allowed.join(", "))));
            }
            values.push((name, value));
        }
        if let Some(Code(reply)) = self.reply_with {
            // The arguments passed, and the defaults of those left out: an
            // optional one with no default stays absent, as code expects.
            let filled = values.iter().filter_map(|(name, value)| value.map(|value| crate::argument(name, value))).collect::<Vec<_>>();
            return reply(&Arguments::from(filled));
        }
        // In a text, an argument left out with no default is empty; in a
        // URI, each value is percent-encoded, so that it cannot add a path
        // segment, a query or a fragment, and `.` and `..` are refused
        // (encoded, they still name another path).
        let fill_as = |template: &str, in_uri: bool| -> Result<String, PromptError> {
            let mut filled = String::new();
            for piece in parse(template).map_err(PromptError::Internal)? {
                match piece {
                    Piece::Text(text) => filled.push_str(text),
                    Piece::Argument(name) => match values.iter().find(|(argument, _)| *argument == name) {
                        Some((_, Some(dots @ ("." | "..")))) if in_uri => {
                            return Err(PromptError::InvalidArguments(format!(
                                "argument '{name}' cannot be {dots:?}: it goes into a URI, where it would name another path"
                            )));
                        }
                        Some((_, value)) if in_uri => filled.push_str(&percent_encoded(value.unwrap_or(""))),
                        Some((_, value)) => filled.push_str(value.unwrap_or("")),
                        None => return Err(PromptError::Internal(format!("{{{name}}} is not an argument"))),
                    },
                }
            }
            Ok(filled)
        };
        let fill = |template: &str| fill_as(template, false);
        let fill_uri = |template: &str| fill_as(template, true);
        let mut messages = Vec::new();
        for (role, block) in &self.messages {
            let content = match block {
                Block::Text(template) => text(fill(template)?),
                Block::Resource { uri, mime_type, text } => crate::text_resource(fill_uri(uri)?, mime_type, fill(text)?),
                Block::Link { uri, name } => crate::Content::ResourceLink(crate::ResourceLink {
                    uri: fill_uri(uri)?,
                    name: fill(name)?,
                    title: None,
                    description: None,
                    mime_type: None,
                    size: None,
                    annotations: None,
                }),
            };
            messages.push(message(*role, content));
        }
        Ok(PromptReply { description: self.description.clone(), messages })
    }

    /// The answer to a request with these arguments, in WIT 0.2: the reply,
    /// or forms for the arguments it [asks for](Template::ask_for) that are
    /// left out (or not one of their choices), until the user fills them in.
    /// A form the user declined leaves the argument at its default, or
    /// refuses the request as missing it.
    pub fn answer(&self, arguments: &Arguments, input: Option<&Input>) -> Result<PromptAnswer, PromptError> {
        let mut filled = arguments.0.clone();
        let mut forms = Vec::new();
        for (name, message) in &self.asks {
            let response = input.and_then(|input| input.response(name));
            let answered = input.and_then(|input| input.value(name, name)).and_then(FieldValue::as_str);
            if let Some(value) = answered {
                filled.retain(|argument| argument.name != *name);
                filled.push(crate::argument(name, value));
                continue;
            }
            let given = arguments.get(name);
            if matches!(response, Some(FormResponse::Decline | FormResponse::Cancel)) {
                if given.is_none() && !self.defaults.iter().any(|(argument, _)| argument == name) {
                    return Err(PromptError::InvalidArguments(format!("argument '{name}' is missing, and the user declined to give it")));
                }
                continue;
            }
            let allowed = self.choices.iter().find(|(argument, _)| argument == name).map(|(_, choices)| choices);
            let acceptable = given.is_some_and(|value| allowed.is_none_or(|choices| choices.iter().any(|c| c == value)));
            if !acceptable {
                forms.push(self.form_for(name, message));
            }
        }
        if !forms.is_empty() {
            return Ok(ask(forms).into());
        }
        self.render(&Arguments::from(filled)).map(PromptAnswer::from)
    }

    /// Whether the template asks for `argument` when it is left out.
    fn asks_for(&self, argument: &str) -> bool {
        self.asks.iter().any(|(name, _)| name == argument)
    }

    /// The form that asks for `argument`: one field, named after it, of its
    /// choices if it has them, starting at its default.
    fn form_for(&self, argument: &str, message: &str) -> Form {
        let declared = self.declaration.arguments.iter().find(|declared| declared.name == argument);
        let default = self.defaults.iter().find(|(name, _)| name == argument).map(|(_, value)| value.clone());
        let kind = match self.choices.iter().find(|(name, _)| name == argument) {
            Some((_, choices)) => FieldKind::Enum(crate::EnumField { choices: choices.clone(), default }),
            None => FieldKind::String(default),
        };
        let field = crate::FormField {
            name: argument.to_string(),
            title: declared.and_then(|declared| declared.title.clone()),
            description: declared.and_then(|declared| declared.description.clone()),
            kind,
            required: true,
        };
        crate::form(argument, message).field(field)
    }

    /// The completion for `argument`, given what the user typed so far.
    pub fn complete(&self, argument: &str, typed: &str) -> Completion {
        if let Some(Code(complete)) = self.complete_with {
            return complete(argument, typed);
        }
        match self.choices.iter().find(|(name, _)| name == argument) {
            Some((_, choices)) => {
                let choices: Vec<&str> = choices.iter().map(String::as_str).collect();
                complete_from(&choices, typed)
            }
            None => no_completions(),
        }
    }
}

/// Whether `uri`, a template text, starts with a scheme (`https:`) before
/// its first placeholder: RFC 3986's `ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`.
fn starts_with_scheme(uri: &str) -> bool {
    let Some((scheme, _)) = uri.split_once(':') else { return false };
    let mut characters = scheme.chars();
    characters.next().is_some_and(|first| first.is_ascii_alphabetic())
        && characters.all(|character| character.is_ascii_alphanumeric() || "+-.".contains(character))
}

/// Whether `mime_type` is a media type, `type/subtype` (parameters after a
/// `;` allowed), as the host checks it: each an RFC 9110 token.
fn is_media_type(mime_type: &str) -> bool {
    let token = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    let essence = mime_type.split(';').next().unwrap_or_default().trim();
    essence.split_once('/').is_some_and(|(kind, subtype)| token(kind) && token(subtype))
}

/// `value` with every byte but RFC 3986's unreserved characters
/// (`A-Z a-z 0-9 - . _ ~`) percent-encoded: a value in a URI adds no `/`,
/// `?` or `#` of its own (`.` and `..` are refused before).
fn percent_encoded(value: &str) -> String {
    let mut encoded = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(byte as char);
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    encoded
}

/// A part of a template text.
#[derive(Debug, PartialEq)]
enum Piece<'a> {
    Text(&'a str),
    Argument(&'a str),
}

/// Splits a template text into literal text and `{argument}` placeholders.
fn parse(template: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = template;
    while let Some(index) = rest.find(['{', '}']) {
        if index > 0 {
            pieces.push(Piece::Text(&rest[..index]));
        }
        let after = &rest[index + 1..];
        if rest[index..].starts_with("{{") || rest[index..].starts_with("}}") {
            pieces.push(Piece::Text(&rest[index..index + 1]));
            rest = &after[1..];
        } else if rest[index..].starts_with('}') {
            return Err(format!("a lone '}}' in {template:?}: write '}}}}' for a literal brace"));
        } else {
            let end = after.find('}').ok_or_else(|| format!("an unclosed '{{' in {template:?}: write '{{{{' for a literal brace"))?;
            pieces.push(Piece::Argument(&after[..end]));
            rest = &after[end + 1..];
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest));
    }
    Ok(pieces)
}

impl<T: TemplatePack> Guest for T {
    fn list_prompts() -> Vec<Prompt> {
        list::<T>()
    }

    fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
        find::<T>(&name)?.render(&Arguments::from(arguments))
    }

    fn complete(prompt: String, argument: String, value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(find::<T>(&prompt)?.complete(&argument, &value))
    }
}

impl<T: TemplatePack + DescribePack> crate::v0_2::Guest for T {
    fn describe_pack() -> PackInfo {
        T::describe()
    }

    fn list_prompts() -> Vec<Prompt> {
        list::<T>()
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        find::<T>(&name)?.answer(&Arguments::from(arguments), input.as_ref())
    }

    fn complete(prompt: String, argument: String, value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(find::<T>(&prompt)?.complete(&argument, &value))
    }
}

impl<T: TemplatePack + crate::v0_3::DescribePack> crate::v0_3::Guest for T {
    fn describe_pack() -> crate::v0_3::PackInfo {
        <T as crate::v0_3::DescribePack>::describe()
    }

    fn list_prompts() -> Vec<crate::v0_3::Prompt> {
        checked::<T>().iter().map(Template::declaration_v0_3).collect()
    }

    fn get_prompt(name: String, arguments: Vec<Argument>, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
        find::<T>(&name)?.answer(&Arguments::from(arguments), input.as_ref())
    }

    fn complete(prompt: String, argument: String, value: String, _context: Vec<Argument>) -> Result<Completion, PromptError> {
        Ok(find::<T>(&prompt)?.complete(&argument, &value))
    }
}

/// The declarations of the pack's templates, or a panic naming the first
/// mistake in them.
fn list<T: TemplatePack>() -> Vec<Prompt> {
    checked::<T>().iter().map(Template::declaration).collect()
}

/// The pack's templates, or a panic naming the first mistake in them.
fn checked<T: TemplatePack>() -> Vec<Template> {
    let templates = T::templates();
    if let Err(mistake) = check_templates(&templates) {
        // The host reports a panic while listing, with its message and
        // location, and refuses the pack: the author sees it on first
        // load. The location is the template's, not this line's.
        let at = mistake.at;
        std::panic::set_hook(Box::new(move |info| {
            let message = info.payload().downcast_ref::<String>().map_or("", String::as_str);
            eprintln!("thread '<unnamed>' panicked at {at}:\n{message}");
        }));
        panic!("{}", mistake.problem);
    }
    templates
}

fn find<T: TemplatePack>(name: &str) -> Result<Template, PromptError> {
    T::templates().into_iter().find(|template| template.declaration.name == name).ok_or(PromptError::NotFound)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{argument, optional, required, user_text};

    fn summarize() -> Template {
        template("summarize", "Asks for a summary")
            .argument(required("text", "The text"))
            .argument(optional("length", "How long"))
            .default("length", "short")
            .choices("length", &["short", "medium", "long"])
            .user("Write a {length} summary of {{this}}:\n\n{text}")
            .assistant("A {length} one.")
    }

    #[test]
    fn a_default_is_said_in_its_arguments_description() {
        let declared = summarize().declaration();
        let descriptions: Vec<Option<&str>> = declared.arguments.iter().map(|a| a.description.as_deref()).collect();
        assert_eq!(descriptions, [Some("The text"), Some("How long (default: short)")]);
        // Said once, when the author already said it; not at all for "".
        let said = template("a", "A").argument(optional("x", "X (default: 1)")).default("x", "1").user("{x}");
        assert_eq!(said.declaration().arguments[0].description.as_deref(), Some("X (default: 1)"));
        let gap = template("a", "A").argument(optional("x", "X")).default("x", "").user("{x}");
        assert_eq!(gap.declaration().arguments[0].description.as_deref(), Some("X"));
        let undescribed = template("a", "A").argument(PromptArgument { description: None, ..optional("x", "") }).default("x", "2");
        assert_eq!(undescribed.declaration().arguments[0].description.as_deref(), Some("(default: 2)"));
    }

    #[test]
    fn placeholders_are_filled_from_arguments_and_defaults() {
        let reply = summarize().render(&Arguments::from(vec![argument("text", "Hi.")])).unwrap();
        assert_eq!(reply.messages, [user_text("Write a short summary of {this}:\n\nHi."), crate::assistant_text("A short one.")]);
    }

    #[test]
    fn arguments_are_checked() {
        let template = summarize();
        assert_eq!(
            template.render(&Arguments::from(vec![])),
            Err(PromptError::InvalidArguments("missing required argument 'text'".into()))
        );
        assert_eq!(
            template.render(&Arguments::from(vec![argument("text", "Hi."), argument("length", "huge")])),
            Err(PromptError::InvalidArguments("argument 'length' must be one of: short, medium, long".into()))
        );
    }

    #[test]
    fn choices_complete() {
        assert_eq!(summarize().complete("length", "m").values, ["medium"]);
        assert_eq!(summarize().complete("text", "m").values, Vec::<String>::new());
    }

    #[test]
    fn mistakes_across_templates_are_found_where_the_template_is() {
        let line = line!() + 1;
        let templates = vec![template("a", "A").user("A"), template("b", "B").user("B"), template("a", "Another A").user("A")];
        let mistake = check_templates(&templates).unwrap_err();
        assert_eq!(mistake.problem, "prompt 'a' is declared more than once: give each prompt a name of its own");
        assert_eq!((mistake.at.file(), mistake.at.line()), (file!(), line));
        let twice = template("a", "A").argument(required("x", "X")).argument(optional("x", "X"));
        assert_eq!(check_templates(&[twice]).unwrap_err().problem, "template of prompt 'a' declares argument 'x' twice");
        assert_eq!(check_templates(&[summarize(), template("b", "B").user("B")]), Ok(()));
    }

    #[test]
    fn an_optional_placeholder_needs_a_default() {
        assert_eq!(
            template("a", "A").argument(optional("tone", "T")).user("in a {tone} tone").check(),
            Err("template of prompt 'a' uses {tone}, an optional argument with no default, which would leave a gap \
                 in the text when left out: give it a default (.default(\"tone\", ...), \"\" if the gap is meant), \
                 or make it required"
                .into())
        );
        let meant = template("a", "A").argument(optional("tone", "T")).default("tone", "").user("in a {tone} tone");
        assert_eq!(meant.check(), Ok(()));
    }

    #[test]
    fn mistakes_in_templates_are_found() {
        assert_eq!(summarize().check(), Ok(()));
        assert_eq!(
            template("a", "A").user("Hello {name}").check(),
            Err("template of prompt 'a' uses {name}, which is not one of its arguments".into())
        );
        assert_eq!(
            template("a", "A").user("Hello {name").check(),
            Err("template of prompt 'a': an unclosed '{' in \"Hello {name\": write '{{' for a literal brace".into())
        );
        assert_eq!(
            template("a", "A").argument(optional("x", "X")).default("x", "3").choices("x", &["1", "2"]).check(),
            Err("template of prompt 'a' defaults 'x' to \"3\", which is not one of its choices".into())
        );
        assert_eq!(
            template("a", "A").default("x", "1").check(),
            Err("template of prompt 'a' sets a default for 'x', which is not one of its arguments".into())
        );
        assert_eq!(
            template("a", "A").argument(required("x", "X")).default("x", "1").check(),
            Err("template of prompt 'a' sets a default for 'x', which is required: it would never be used".into())
        );
        assert_eq!(
            template("a", "A").choices("x", &["1"]).check(),
            Err("template of prompt 'a' sets choices for 'x', which is not one of its arguments".into())
        );
        assert_eq!(
            template("a", "A").argument(optional("x", "X")).choices("x", &[]).check(),
            Err("template of prompt 'a' offers no choices for 'x': give at least one".into())
        );
    }
    fn incident() -> Template {
        template("incident", "Explains an incident from its logs")
            .argument(required("service", "The service"))
            .argument(required("logs", "Its log lines"))
            .user("Explain what went wrong in {service}.")
            .resource("file:///logs/{service}.log", "text/plain", "{logs}")
            .link("https://runbooks.example/{service}", "runbook for {service}")
    }

    #[test]
    fn resources_and_links_are_templates_too() {
        assert_eq!(incident().check(), Ok(()));
        let reply = incident().render(&Arguments::from(vec![argument("service", "api"), argument("logs", "E1\nE2")])).unwrap();
        let link = crate::Content::ResourceLink(crate::ResourceLink {
            uri: "https://runbooks.example/api".into(),
            name: "runbook for api".into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        });
        assert_eq!(
            reply.messages,
            [
                user_text("Explain what went wrong in api."),
                message(Role::User, crate::text_resource("file:///logs/api.log", "text/plain", "E1\nE2")),
                message(Role::User, link),
            ]
        );
        // In a URI, a value is percent-encoded: it cannot add a segment, a
        // query or a fragment. In a text, it is as given.
        let reply = incident().render(&Arguments::from(vec![argument("service", "../a b?#é"), argument("logs", "x")])).unwrap();
        let crate::Content::Resource(resource) = &reply.messages[1].content else { panic!("{reply:?}") };
        assert_eq!(resource.uri, "file:///logs/..%2Fa%20b%3F%23%C3%A9.log");
        let crate::Content::ResourceLink(link) = &reply.messages[2].content else { panic!("{reply:?}") };
        assert_eq!((link.uri.as_str(), link.name.as_str()), ("https://runbooks.example/..%2Fa%20b%3F%23%C3%A9", "runbook for ../a b?#é"));
        // `..` (or `.`) would name another path even encoded: refused.
        assert_eq!(
            incident().render(&Arguments::from(vec![argument("service", ".."), argument("logs", "x")])),
            Err(PromptError::InvalidArguments(
                "argument 'service' cannot be \"..\": it goes into a URI, where it would name another path".into()
            ))
        );
        // What the host would refuse in every reply is a mistake here.
        assert_eq!(
            template("a", "A").argument(required("p", "P")).resource("{p}", "text/plain", "x").check(),
            Err("template of prompt 'a' has the URI \"{p}\", which does not start with a scheme (such as https: or \
                 file:) before its first placeholder: a URI must be absolute, and values are percent-encoded into it"
                .into())
        );
        assert_eq!(
            template("a", "A").resource("file:///x", "text", "x").check(),
            Err("template of prompt 'a' has the media type \"text\", which is not of the form type/subtype".into())
        );
        assert_eq!(
            template("a", "A").argument(required("n", "N")).link("https://example.com/", "{n}").check(),
            Err("template of prompt 'a' has a link whose name has no text of its own: an empty value would leave it without a name".into())
        );
        // Their placeholders are checked as a message's are.
        assert_eq!(
            template("a", "A").resource("file:///{path}", "text/plain", "x").check(),
            Err("template of prompt 'a' uses {path}, which is not one of its arguments".into())
        );
        assert_eq!(
            template("a", "A").argument(optional("x", "X")).link("https://example.com/", "{x}").check(),
            Err("template of prompt 'a' uses {x}, an optional argument with no default, which would leave a gap \
                 in the text when left out: give it a default (.default(\"x\", ...), \"\" if the gap is meant), \
                 or make it required"
                .into())
        );
    }

    #[test]
    fn braces_are_literal_when_doubled_and_values_are_taken_as_given() {
        let braces = template("a", "A").argument(required("x", "X")).user("{{x}} {x}");
        assert_eq!(braces.check(), Ok(()));
        let reply = braces.render(&Arguments::from(vec![argument("x", "{y}")])).unwrap();
        assert_eq!(reply.messages, [user_text("{x} {y}")]);
        // Completion folds ASCII case only.
        let options = ["Éclair", "eclair", "Medium"];
        assert_eq!(complete_from(&options, "m").values, ["Medium"]);
        assert_eq!(complete_from(&options, "é").values, Vec::<String>::new());
    }

    fn count_words(arguments: &Arguments) -> Result<PromptReply, PromptError> {
        let text = arguments.require("text")?;
        let unit = arguments.get("unit").unwrap_or("words");
        let count = if unit == "words" { text.split_whitespace().count() } else { text.chars().count() };
        Ok(crate::reply([user_text(format!("The text has {count} {unit}. Say whether that is long."))]))
    }

    fn complete_units(argument: &str, typed: &str) -> Completion {
        match argument {
            "unit" => complete_from(&["words", "characters"], typed),
            _ => no_completions(),
        }
    }

    #[test]
    fn a_prompt_written_in_code_keeps_its_declaration_checked() {
        let counted = template("count", "Counts a text")
            .argument(required("text", "The text"))
            .argument(optional("unit", "What to count"))
            .argument(optional("note", "A note"))
            .default("unit", "words")
            .choices("unit", &["words", "characters"])
            .reply_with(count_words)
            .complete_with(complete_units);
        assert_eq!(counted.check(), Ok(()));
        // The default is filled in; an optional argument without one stays absent.
        let reply = counted.render(&Arguments::from(vec![argument("text", "one two three")])).unwrap();
        assert_eq!(reply.messages, [user_text("The text has 3 words. Say whether that is long.")]);
        // The template's checks run before the code.
        assert_eq!(
            counted.render(&Arguments::from(vec![argument("text", "x"), argument("unit", "lines")])),
            Err(PromptError::InvalidArguments("argument 'unit' must be one of: words, characters".into()))
        );
        assert_eq!(counted.render(&Arguments::from(vec![])), Err(PromptError::InvalidArguments("missing required argument 'text'".into())));
        assert_eq!(counted.complete("unit", "ch").values, ["characters"]);
        // Mistakes in the declaration are still found.
        assert_eq!(
            counted.clone().default("text", "x").check(),
            Err("template of prompt 'count' sets a default for 'text', which is required: it would never be used".into())
        );
        assert_eq!(
            counted.user("and a message").check(),
            Err("template of prompt 'count' has messages and replies in code (.reply_with): its messages would never be used".into())
        );
        assert_eq!(
            template("a", "A").check(),
            Err("template of prompt 'a' has no messages: give it one (.user(...)), or reply in code (.reply_with(...))".into())
        );
    }

    fn asking() -> Template {
        template("summarize", "Asks for a summary")
            .argument(optional("text", "The text"))
            .argument(optional("length", "How long"))
            .default("length", "short")
            .choices("length", &["short", "long"])
            .ask_for("text", "What should be summarized?")
            .ask_for("length", "How long a summary?")
            .user("Write a {length} summary of:\n\n{text}")
    }

    fn reply_of(answer: Result<PromptAnswer, PromptError>) -> Vec<crate::Message> {
        answer.unwrap().into_reply().expect("a reply").messages
    }

    #[test]
    fn what_is_left_out_or_not_a_choice_is_asked_for() {
        let template = asking();
        let asked = template.answer(&Arguments::from(vec![argument("length", "huge")]), None).unwrap();
        let forms = asked.into_input_required().expect("forms").forms;
        let text = crate::form("text", "What should be summarized?").field(crate::string_field("text", "The text"));
        let length = crate::form("length", "How long a summary?")
            .field(crate::enum_field("length", "How long", &["short", "long"]).default("short"));
        assert_eq!(forms, [text, length]);
        // Given, and one of the choices: nothing to ask.
        let given = vec![argument("text", "Hi."), argument("length", "long")];
        assert_eq!(reply_of(template.answer(&Arguments::from(given), None)), [user_text("Write a long summary of:\n\nHi.")]);
    }

    #[test]
    fn answers_fill_in_what_was_asked_for() {
        let template = asking();
        let input = crate::answers([crate::accepted("text", [("text", "Hello.")]), crate::declined("length")]);
        let answer = template.answer(&Arguments::from(vec![]), Some(&input));
        // A declined form leaves the argument at its default.
        assert_eq!(reply_of(answer), [user_text("Write a short summary of:\n\nHello.")]);
        // An answer overrides the value the client passed.
        let input = crate::answers([crate::accepted("length", [("length", "long")])]);
        let answer = template.answer(&Arguments::from(vec![argument("text", "Hi."), argument("length", "huge")]), Some(&input));
        assert_eq!(reply_of(answer), [user_text("Write a long summary of:\n\nHi.")]);
        // Declined, with no default: the request is refused, naming the argument.
        let input = crate::answers([crate::declined("text")]);
        assert_eq!(
            template.answer(&Arguments::from(vec![]), Some(&input)),
            Err(PromptError::InvalidArguments("argument 'text' is missing, and the user declined to give it".into()))
        );
    }

    #[test]
    fn a_0_1_pack_refuses_what_it_cannot_ask_for() {
        assert_eq!(
            asking().render(&Arguments::from(vec![])),
            Err(PromptError::InvalidArguments("missing required argument 'text'".into()))
        );
    }

    #[test]
    fn mistakes_in_asking_are_found() {
        assert_eq!(asking().check(), Ok(()));
        assert_eq!(
            template("a", "A").ask_for("x", "X?").check(),
            Err("template of prompt 'a' asks for 'x', which is not one of its arguments".into())
        );
        assert_eq!(
            template("a", "A").argument(required("x", "X")).ask_for("x", "X?").check(),
            Err("template of prompt 'a' asks for 'x', which is required: the host refuses a request without it \
                 before the pack runs, so it would never be asked; declare it optional"
                .into())
        );
        assert_eq!(
            template("a", "A").argument(optional("x", "X")).ask_for("x", "X?").ask_for("x", "Y?").check(),
            Err("template of prompt 'a' asks for 'x' twice".into())
        );
        let many = (0..9).fold(template("a", "A"), |template, index| {
            let name = format!("x{index}");
            template.argument(optional(&name, "X")).ask_for(&name, "X?")
        });
        assert_eq!(many.check(), Err("template of prompt 'a' asks for 9 arguments, more than the 8 forms the host takes at once".into()));
    }
}
