//! Host-side bindings generated from the WIT packages in `wit/`, one module
//! per version the host accepts (0.1 in `wit/`, 0.2 in `wit/0.2/`, 0.3 in
//! `wit/0.3/`), and the one adapter from each into the host's own types.
//!
//! The host's own types are 0.1's (`provider`), which every module above
//! this one speaks, plus the input-required types 0.2 added
//! (`provider_v0_2::InputRequired` and `Input`), 0.2's `PackInfo`, and
//! [`PromptAnswer`]; what 0.3 added (argument kinds, what a pack wants) is
//! taken as 0.3's types by `validate`, which turns the kinds into the
//! host's [`crate::arguments`]. A 0.2 or 0.3 pack's answers are converted
//! here, once, into those; nothing above the plugin layer knows which
//! version a pack targets, except to report it.
//!
//! Every export is called asynchronously, so that a plugin's call yields to
//! the runtime (see `sandbox`) instead of holding a worker thread.

/// Bindings of `prompt-host:prompts@0.1.0`.
// The generated types are documented in the WIT files under wit/; bindgen!
// cannot carry those comments into its output.
#[allow(missing_docs)]
pub mod v0_1 {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "prompt-pack",
        exports: { default: async },
    });
}

/// Bindings of `prompt-host:prompts@0.2.0`.
// The generated types are documented in the WIT files under wit/0.2/;
// bindgen! cannot carry those comments into its output.
#[allow(missing_docs)]
pub mod v0_2 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.2",
        world: "prompt-pack",
        exports: { default: async },
    });
}

/// Bindings of `prompt-host:prompts@0.3.1` (a 0.3.0 pack's exports are
/// found by their semver-compatible names). The `asking` interface 0.3.1
/// added is optional, so it is looked up by name ([`ASKING_INTERFACE`]),
/// not bound here.
// The generated types are documented in the WIT files under wit/0.3/;
// bindgen! cannot carry those comments into its output.
#[allow(missing_docs)]
pub mod v0_3 {
    wasmtime::component::bindgen!({
        path: "../../wit/0.3",
        world: "prompt-pack",
        exports: { default: async },
    });
}

pub use v0_1::exports::prompt_host::prompts::prompt_provider as provider;
pub use v0_2::exports::prompt_host::prompts::prompt_provider as provider_v0_2;
pub use v0_3::exports::prompt_host::prompts::prompt_provider as provider_v0_3;

/// The fully qualified name of the interface every pack must export, without
/// its version.
pub const PROVIDER_INTERFACE: &str = "prompt-host:prompts/prompt-provider";

/// A version of the WIT package a pack may target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
pub enum WitVersion {
    /// `prompt-host:prompts@0.1.x` (`wit/`).
    #[serde(rename = "0.1")]
    V0_1,
    /// `prompt-host:prompts@0.2.x` (`wit/0.2/`), which added `input-required`.
    #[serde(rename = "0.2")]
    V0_2,
    /// `prompt-host:prompts@0.3.x` (`wit/0.3/`), which added typed arguments
    /// and what a pack wants to see.
    #[serde(rename = "0.3")]
    V0_3,
}

impl WitVersion {
    /// Every version this host accepts, oldest first.
    pub const ACCEPTED: [WitVersion; 3] = [WitVersion::V0_1, WitVersion::V0_2, WitVersion::V0_3];

    /// The version an exported interface's version string (`0.2.0`, `0.1.3`)
    /// belongs to, if this host accepts it: any patch release of an accepted
    /// minor version.
    pub fn of(version: &str) -> Option<WitVersion> {
        WitVersion::ACCEPTED.into_iter().find(|accepted| version.starts_with(accepted.prefix()))
    }

    /// The start of every version string of this minor version: `0.2.`.
    fn prefix(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "0.1.",
            WitVersion::V0_2 => "0.2.",
            WitVersion::V0_3 => "0.3.",
        }
    }

    /// The version as people read it: `0.2`.
    pub fn as_str(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "0.1",
            WitVersion::V0_2 => "0.2",
            WitVersion::V0_3 => "0.3",
        }
    }

    /// Whether packs of this version can answer `input-required`.
    pub fn can_ask_for_input(self) -> bool {
        self >= WitVersion::V0_2
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A pack's component, linked and ready to instantiate, in the version of
/// the bindings it targets.
pub enum PackPre<T: 'static> {
    /// A pack that targets 0.1.
    V0_1(v0_1::PromptPackPre<T>),
    /// A pack that targets 0.2.
    V0_2(v0_2::PromptPackPre<T>),
    /// A pack that targets 0.3.
    V0_3(PackPreV0_3<T>),
}

impl<T: 'static> Clone for PackPre<T> {
    fn clone(&self) -> Self {
        match self {
            PackPre::V0_1(pre) => PackPre::V0_1(pre.clone()),
            PackPre::V0_2(pre) => PackPre::V0_2(pre.clone()),
            PackPre::V0_3(pre) => PackPre::V0_3(pre.clone()),
        }
    }
}

/// The interface through which a 0.3.1 pack opts prompts in to have the
/// host ask for their missing arguments (any 0.3.x release of it is found).
pub const ASKING_INTERFACE: &str = "prompt-host:prompts/asking@0.3.1";

/// Its one function: the names of the prompts that opt in.
pub const PROMPTS_THAT_ASK: &str = "prompts-that-ask";

/// A 0.3 pack, linked: its bindings, and the `prompts-that-ask` function of
/// its `asking` export, if it has one.
pub struct PackPreV0_3<T: 'static> {
    /// The bindings of `prompt-provider`.
    pub pre: v0_3::PromptPackPre<T>,
    /// Where `prompt-provider`'s functions are, resolved once.
    pub indices: v0_3::PromptPackIndices,
    /// `asking`'s `prompts-that-ask`, if the pack exports it.
    pub prompts_that_ask: Option<wasmtime::component::ComponentExportIndex>,
}

impl<T: 'static> Clone for PackPreV0_3<T> {
    fn clone(&self) -> Self {
        PackPreV0_3 { pre: self.pre.clone(), indices: self.indices.clone(), prompts_that_ask: self.prompts_that_ask }
    }
}

impl<T: 'static> PackPre<T> {
    /// The version the pack targets.
    pub fn version(&self) -> WitVersion {
        match self {
            PackPre::V0_1(_) => WitVersion::V0_1,
            PackPre::V0_2(_) => WitVersion::V0_2,
            PackPre::V0_3(_) => WitVersion::V0_3,
        }
    }
}

/// An instantiated pack, in the version of the bindings it targets.
pub enum Pack {
    /// A pack that targets 0.1.
    V0_1(v0_1::PromptPack),
    /// A pack that targets 0.2.
    V0_2(v0_2::PromptPack),
    /// A pack that targets 0.3, and its instance when the pack exports
    /// `asking` (to call `prompts-that-ask` at load).
    V0_3(v0_3::PromptPack, Option<(wasmtime::component::Instance, wasmtime::component::ComponentExportIndex)>),
}

/// What `get-prompt` answered, in the host's types: a 0.1 pack always
/// answers with a reply.
#[derive(Debug, Clone)]
pub enum PromptAnswer {
    /// The prompt's messages.
    Reply(provider::PromptReply),
    /// The pack needs answers from the user first (0.2 packs only): forms to
    /// fill in, and state of the pack's own that comes back with them.
    InputRequired(provider_v0_2::InputRequired),
}

/// The conversions every version after 0.1 shares: the types it kept from
/// 0.1 are the same records, generated once per version. Expanded in a
/// module where `v` names that version's `prompt_provider` and `host` the
/// host's.
macro_rules! kept_from_v0_1 {
    () => {
        fn prompt(prompt: v::Prompt) -> host::Prompt {
            host::Prompt {
                name: prompt.name,
                title: prompt.title,
                description: prompt.description,
                arguments: prompt.arguments.into_iter().map(prompt_argument).collect(),
                icons: prompt.icons.into_iter().map(icon).collect(),
            }
        }

        // A 0.3 argument's kind, default and examples are read by `validate`.
        fn prompt_argument(argument: v::PromptArgument) -> host::PromptArgument {
            host::PromptArgument {
                name: argument.name,
                title: argument.title,
                description: argument.description,
                required: argument.required,
            }
        }

        fn icon(icon: v::Icon) -> host::Icon {
            host::Icon {
                src: icon.src,
                mime_type: icon.mime_type,
                sizes: icon.sizes,
                theme: icon.theme.map(|theme| match theme {
                    v::IconTheme::Light => host::IconTheme::Light,
                    v::IconTheme::Dark => host::IconTheme::Dark,
                }),
            }
        }

        fn reply(reply: v::PromptReply) -> host::PromptReply {
            host::PromptReply { description: reply.description, messages: reply.messages.into_iter().map(message).collect() }
        }

        fn message(message: v::Message) -> host::Message {
            host::Message { role: role(message.role), content: content(message.content) }
        }

        fn role(role: v::Role) -> host::Role {
            match role {
                v::Role::User => host::Role::User,
                v::Role::Assistant => host::Role::Assistant,
            }
        }

        fn annotations(annotations: v::Annotations) -> host::Annotations {
            host::Annotations {
                audience: annotations.audience.into_iter().map(role).collect(),
                priority: annotations.priority,
                last_modified: annotations.last_modified,
            }
        }

        fn media(media: v::MediaContent) -> host::MediaContent {
            host::MediaContent { data: media.data, mime_type: media.mime_type, annotations: media.annotations.map(annotations) }
        }

        fn content(content: v::Content) -> host::Content {
            match content {
                v::Content::Text(text) => {
                    host::Content::Text(host::TextContent { text: text.text, annotations: text.annotations.map(annotations) })
                }
                v::Content::Image(image) => host::Content::Image(media(image)),
                v::Content::Audio(audio) => host::Content::Audio(media(audio)),
                v::Content::Resource(resource) => host::Content::Resource(host::EmbeddedResource {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    body: match resource.body {
                        v::ResourceBody::Text(text) => host::ResourceBody::Text(text),
                        v::ResourceBody::Blob(blob) => host::ResourceBody::Blob(blob),
                    },
                    annotations: resource.annotations.map(annotations),
                }),
                v::Content::ResourceLink(link) => host::Content::ResourceLink(host::ResourceLink {
                    uri: link.uri,
                    name: link.name,
                    title: link.title,
                    description: link.description,
                    mime_type: link.mime_type,
                    size: link.size,
                    annotations: link.annotations.map(annotations),
                }),
            }
        }

        /// A pack's prompt error, as the host's.
        pub fn error(error: v::PromptError) -> host::PromptError {
            match error {
                v::PromptError::NotFound => host::PromptError::NotFound,
                v::PromptError::InvalidArguments(message) => host::PromptError::InvalidArguments(message),
                v::PromptError::Internal(message) => host::PromptError::Internal(message),
            }
        }

        /// A pack's completion, as the host's.
        pub fn completion(completion: v::Completion) -> host::Completion {
            host::Completion { values: completion.values, total: completion.total, has_more: completion.has_more }
        }

        /// Arguments the other way: from the host to the pack.
        pub fn arguments(arguments: &[host::Argument]) -> Vec<v::Argument> {
            arguments.iter().map(|argument| v::Argument { name: argument.name.clone(), value: argument.value.clone() }).collect()
        }
    };
}

/// The adapter from 0.2's types into the host's (0.1's).
pub mod from_v0_2 {
    use super::{PromptAnswer, provider as host, provider_v0_2 as v};

    kept_from_v0_1!();

    /// A 0.2 pack's `list-prompts` result, as the host's prompts.
    pub fn prompts(prompts: Vec<v::Prompt>) -> Vec<host::Prompt> {
        prompts.into_iter().map(prompt).collect()
    }

    /// A 0.2 pack's `get-prompt` answer, as the host's [`PromptAnswer`].
    pub fn answer(answer: v::PromptAnswer) -> PromptAnswer {
        match answer {
            v::PromptAnswer::Reply(reply) => PromptAnswer::Reply(self::reply(reply)),
            v::PromptAnswer::InputRequired(input) => PromptAnswer::InputRequired(input),
        }
    }
}

/// The adapter from 0.3's types into the host's: 0.1's, and 0.2's for
/// input-required and what a pack is. What 0.3 added (argument kinds, what
/// a pack wants) stays in 0.3's types, for `validate`.
pub mod from_v0_3 {
    use super::{PromptAnswer, provider as host, provider_v0_2 as v2, provider_v0_3 as v};

    kept_from_v0_1!();

    /// A 0.3 pack's `list-prompts` result, as the host's prompts; the
    /// arguments' kinds, defaults and examples are read from the result
    /// itself (`validate::argument_declarations`).
    pub fn prompts(prompts: &[v::Prompt]) -> Vec<host::Prompt> {
        prompts.iter().cloned().map(prompt).collect()
    }

    /// What a 0.3 pack says it is, as the host's (0.2's), and what it wants.
    pub fn info(info: v::PackInfo) -> (v2::PackInfo, v::Wants) {
        let v::PackInfo { name, version, description, authors, license, homepage, repository, wants } = info;
        (v2::PackInfo { name, version, description, authors, license, homepage, repository }, wants)
    }

    /// A 0.3 pack's `get-prompt` answer, as the host's [`PromptAnswer`].
    pub fn answer(answer: v::PromptAnswer) -> PromptAnswer {
        match answer {
            v::PromptAnswer::Reply(reply) => PromptAnswer::Reply(self::reply(reply)),
            v::PromptAnswer::InputRequired(input) => PromptAnswer::InputRequired(input_required(input)),
        }
    }

    fn input_required(input: v::InputRequired) -> v2::InputRequired {
        v2::InputRequired { forms: input.forms.into_iter().map(form).collect(), state: input.state }
    }

    fn form(form: v::Form) -> v2::Form {
        v2::Form { key: form.key, message: form.message, fields: form.fields.into_iter().map(field).collect() }
    }

    fn field(field: v::FormField) -> v2::FormField {
        let kind = match field.kind {
            v::FieldKind::String(default) => v2::FieldKind::String(default),
            v::FieldKind::Number(default) => v2::FieldKind::Number(default),
            v::FieldKind::Integer(default) => v2::FieldKind::Integer(default),
            v::FieldKind::Boolean(default) => v2::FieldKind::Boolean(default),
            v::FieldKind::Enum(choices) => v2::FieldKind::Enum(v2::EnumField { choices: choices.choices, default: choices.default }),
        };
        v2::FormField { name: field.name, title: field.title, description: field.description, kind, required: field.required }
    }

    /// The user's answers, from the host to a 0.3 pack.
    pub fn input(input: &v2::Input) -> v::Input {
        let value = |value: &v2::FieldValue| match value {
            v2::FieldValue::String(text) => v::FieldValue::String(text.clone()),
            v2::FieldValue::Number(number) => v::FieldValue::Number(*number),
            v2::FieldValue::Integer(integer) => v::FieldValue::Integer(*integer),
            v2::FieldValue::Boolean(boolean) => v::FieldValue::Boolean(*boolean),
        };
        let response = |response: &v2::FormResponse| match response {
            v2::FormResponse::Accept(answers) => v::FormResponse::Accept(
                answers.iter().map(|answer| v::FieldAnswer { name: answer.name.clone(), value: value(&answer.value) }).collect(),
            ),
            v2::FormResponse::Decline => v::FormResponse::Decline,
            v2::FormResponse::Cancel => v::FormResponse::Cancel,
        };
        v::Input {
            answers: input
                .answers
                .iter()
                .map(|answer| v::FormAnswer { key: answer.key.clone(), response: response(&answer.response) })
                .collect(),
            state: input.state.clone(),
        }
    }
}
