//! The host's own model of a pack: what it says it is, what it wants, its
//! prompts and their typed arguments, what a call answers, and what the host
//! passes in. Every module above `bindings` speaks these types and nothing
//! else; each WIT version's adapter (`bindings::v0_1`, `v0_2`, `v0_3`) turns
//! its generated types into these, once, at the edge.
//!
//! The model is the union of the versions: a field an older version lacks
//! takes its empty value there (no kind, no default, no examples, no
//! wants). Field names follow the WIT files, which document them.

/// Who speaks a message, or whom an annotation addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// The theme an icon is drawn for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IconTheme {
    /// For a light background.
    Light,
    /// For a dark background.
    Dark,
}

/// An icon of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Icon {
    /// Where the icon is: an `https:` or `data:` URI.
    pub src: String,
    /// Its media type.
    pub mime_type: Option<String>,
    /// The sizes it is drawn at (`48x48`, `any`).
    pub sizes: Vec<String>,
    /// The theme it is drawn for.
    pub theme: Option<IconTheme>,
}

/// A text argument's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct TextKind {
    /// The most characters a value may have.
    pub max_length: Option<u32>,
    /// A pattern every value matches (ECMA-262 syntax).
    pub pattern: Option<String>,
}

/// An integer argument's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct IntegerKind {
    /// The least value.
    pub min: Option<i64>,
    /// The greatest value.
    pub max: Option<i64>,
}

/// A number argument's bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct NumberKind {
    /// The least value.
    pub min: Option<f64>,
    /// The greatest value.
    pub max: Option<f64>,
}

/// A URI argument's schemes.
#[derive(Debug, Clone, PartialEq)]
pub struct UriKind {
    /// The schemes a value may have; any when empty.
    pub schemes: Vec<String>,
}

/// The kind of value an argument takes, as a pack declares it (checked and
/// turned into [`crate::arguments::Kind`] by `validate`).
#[derive(Debug, Clone, PartialEq)]
pub enum ArgumentKind {
    /// Text, within bounds.
    Text(TextKind),
    /// An integer, within bounds.
    Integer(IntegerKind),
    /// A number, within bounds.
    Number(NumberKind),
    /// `true` or `false`.
    Boolean,
    /// One of these choices.
    Choice(Vec<String>),
    /// A URI, of one of these schemes.
    Uri(UriKind),
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What it is for.
    pub description: Option<String>,
    /// Whether a call must give it.
    pub required: bool,
    /// The kind of value it takes; none for any text.
    pub kind: Option<ArgumentKind>,
    /// The value it takes when a call does not give it.
    pub default: Option<String>,
    /// Values a client may offer.
    pub examples: Vec<String>,
}

/// A prompt a pack serves.
#[derive(Debug, Clone, PartialEq)]
pub struct Prompt {
    /// Its name, unique in the pack.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What it does.
    pub description: Option<String>,
    /// Its arguments.
    pub arguments: Vec<PromptArgument>,
    /// Its icons.
    pub icons: Vec<Icon>,
}

/// Annotations of a piece of content.
#[derive(Debug, Clone, PartialEq)]
pub struct Annotations {
    /// Whom it is for.
    pub audience: Vec<Role>,
    /// How much it matters, from 0 to 1.
    pub priority: Option<f32>,
    /// When it last changed (ISO 8601).
    pub last_modified: Option<String>,
}

/// Text content.
#[derive(Debug, Clone, PartialEq)]
pub struct TextContent {
    /// The text.
    pub text: String,
    /// Its annotations.
    pub annotations: Option<Annotations>,
}

/// An image or audio.
#[derive(Debug, Clone, PartialEq)]
pub struct MediaContent {
    /// Its bytes.
    pub data: Vec<u8>,
    /// Its media type.
    pub mime_type: String,
    /// Its annotations.
    pub annotations: Option<Annotations>,
}

/// An embedded resource's body.
#[derive(Debug, Clone, PartialEq)]
pub enum ResourceBody {
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// A resource embedded in a message.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddedResource {
    /// Its URI.
    pub uri: String,
    /// Its media type.
    pub mime_type: Option<String>,
    /// Its body.
    pub body: ResourceBody,
    /// Its annotations.
    pub annotations: Option<Annotations>,
}

/// A link to a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceLink {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What it is.
    pub description: Option<String>,
    /// Its media type.
    pub mime_type: Option<String>,
    /// Its size in bytes.
    pub size: Option<u64>,
    /// Its annotations.
    pub annotations: Option<Annotations>,
}

/// A message's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    /// Text.
    Text(TextContent),
    /// An image.
    Image(MediaContent),
    /// Audio.
    Audio(MediaContent),
    /// An embedded resource.
    Resource(EmbeddedResource),
    /// A link to a resource.
    ResourceLink(ResourceLink),
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    /// Who speaks it.
    pub role: Role,
    /// What it says.
    pub content: Content,
}

/// A prompt's messages.
#[derive(Debug, Clone, PartialEq)]
pub struct PromptReply {
    /// What the prompt does, for this call.
    pub description: Option<String>,
    /// The messages.
    pub messages: Vec<Message>,
}

/// One argument of a call: a name and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Argument {
    /// The argument's name.
    pub name: String,
    /// Its value.
    pub value: String,
}

/// Why a pack refused a call.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptError {
    /// It serves no prompt of that name.
    NotFound,
    /// The arguments are wrong, and how.
    InvalidArguments(String),
    /// It failed, and how.
    Internal(String),
}

/// Completions of an argument's value.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// The values, best first.
    pub values: Vec<String>,
    /// How many there are in all.
    pub total: Option<u32>,
    /// Whether there are more than `values`.
    pub has_more: bool,
}

/// The kind of a form's field, with its default.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Text.
    String(Option<String>),
    /// A number.
    Number(Option<f64>),
    /// An integer.
    Integer(Option<i64>),
    /// `true` or `false`.
    Boolean(Option<bool>),
    /// One of some choices.
    Enum(EnumField),
}

/// A field of choices.
#[derive(Debug, Clone, PartialEq)]
pub struct EnumField {
    /// The choices.
    pub choices: Vec<String>,
    /// The choice made unless the user makes another.
    pub default: Option<String>,
}

/// One field of a form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    /// Its name, unique in the form.
    pub name: String,
    /// A name for people.
    pub title: Option<String>,
    /// What it asks.
    pub description: Option<String>,
    /// What it takes.
    pub kind: FieldKind,
    /// Whether the user must fill it in to accept.
    pub required: bool,
}

/// A form for the user to fill in.
#[derive(Debug, Clone, PartialEq)]
pub struct Form {
    /// Its key, unique in the answer.
    pub key: String,
    /// What it asks, for people.
    pub message: String,
    /// Its fields.
    pub fields: Vec<FormField>,
}

/// A pack needs answers from the user first.
#[derive(Debug, Clone, PartialEq)]
pub struct InputRequired {
    /// The forms to fill in.
    pub forms: Vec<Form>,
    /// State of the pack's own that comes back with the answers.
    pub state: Vec<u8>,
}

/// A field's value, as the user gave it.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    /// Text.
    String(String),
    /// A number.
    Number(f64),
    /// An integer.
    Integer(i64),
    /// `true` or `false`.
    Boolean(bool),
}

/// One field's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldAnswer {
    /// The field's name.
    pub name: String,
    /// Its value.
    pub value: FieldValue,
}

/// What the user did with a form.
#[derive(Debug, Clone, PartialEq)]
pub enum FormResponse {
    /// Filled it in.
    Accept(Vec<FieldAnswer>),
    /// Said no.
    Decline,
    /// Went away.
    Cancel,
}

/// The answer to one form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormAnswer {
    /// The form's key.
    pub key: String,
    /// What the user did.
    pub response: FormResponse,
}

/// The answers to the forms a pack asked for, and its state.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// One answer per form.
    pub answers: Vec<FormAnswer>,
    /// The state the pack gave with its forms.
    pub state: Vec<u8>,
}

/// What `get-prompt` answered: a 0.1 pack always answers with a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum PromptAnswer {
    /// The prompt's messages.
    Reply(PromptReply),
    /// The pack needs answers from the user first: forms to fill in, and
    /// state of the pack's own that comes back with them.
    InputRequired(InputRequired),
}

/// A folder a pack would like to be granted.
#[derive(Debug, Clone, PartialEq)]
pub struct WantedFolder {
    /// The name the pack opens it by.
    pub name: String,
    /// What it reads there.
    pub description: Option<String>,
}

/// What a pack would like to be granted; the operator decides.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Wants {
    /// Folders, by name.
    pub folders: Vec<WantedFolder>,
    /// HTTP origins.
    pub origins: Vec<String>,
    /// Environment variables, by name.
    pub env: Vec<String>,
}

/// What a pack says it is.
#[derive(Debug, Clone, PartialEq)]
pub struct PackInfo {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// What it is for.
    pub description: Option<String>,
    /// Who wrote it.
    pub authors: Vec<String>,
    /// Its license (SPDX).
    pub license: Option<String>,
    /// Its home page.
    pub homepage: Option<String>,
    /// Its source.
    pub repository: Option<String>,
}

/// What a pack carries beside its prompts (0.4's `content`), as it handed
/// it over, unchecked: `validate::content` checks it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PackContent {
    /// Every file of every skill.
    pub skill_files: Vec<SkillFile>,
    /// Its static resources.
    pub resources: Vec<StaticResource>,
}

/// One file of a skill.
#[derive(Debug, Clone, PartialEq)]
pub struct SkillFile {
    /// The skill's path, then the file's path within it: `code-review/SKILL.md`.
    pub path: String,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// A resource a client reads with `resources/read`.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticResource {
    /// Its URI.
    pub uri: String,
    /// A short name.
    pub name: String,
    /// A human-readable title.
    pub title: Option<String>,
    /// What it holds.
    pub description: Option<String>,
    /// Its MIME type.
    pub mime_type: Option<String>,
    /// Its contents.
    pub body: ResourceBody,
}
