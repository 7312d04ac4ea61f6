//! Host-side bindings generated from the WIT packages in `wit/`, one module
//! per version the host accepts (0.1 in `wit/`, 0.2 in `wit/0.2/`), and the
//! one adapter from each into the host's own types.
//!
//! The host's own types are 0.1's (`provider`), which every module above
//! this one speaks, plus the input-required types 0.2 added
//! (`provider_v0_2::InputRequired` and `Input`) and [`PromptAnswer`]. A 0.2
//! pack's answers are converted here, once, into those; nothing above the
//! plugin layer knows which version a pack targets, except to report it.
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

pub use v0_1::exports::prompt_host::prompts::prompt_provider as provider;
pub use v0_2::exports::prompt_host::prompts::prompt_provider as provider_v0_2;

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
}

impl WitVersion {
    /// Every version this host accepts, oldest first.
    pub const ACCEPTED: [WitVersion; 2] = [WitVersion::V0_1, WitVersion::V0_2];

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
        }
    }

    /// The version as people read it: `0.2`.
    pub fn as_str(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "0.1",
            WitVersion::V0_2 => "0.2",
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
}

impl<T: 'static> Clone for PackPre<T> {
    fn clone(&self) -> Self {
        match self {
            PackPre::V0_1(pre) => PackPre::V0_1(pre.clone()),
            PackPre::V0_2(pre) => PackPre::V0_2(pre.clone()),
        }
    }
}

impl<T: 'static> PackPre<T> {
    /// The version the pack targets.
    pub fn version(&self) -> WitVersion {
        match self {
            PackPre::V0_1(_) => WitVersion::V0_1,
            PackPre::V0_2(_) => WitVersion::V0_2,
        }
    }
}

/// An instantiated pack, in the version of the bindings it targets.
pub enum Pack {
    /// A pack that targets 0.1.
    V0_1(v0_1::PromptPack),
    /// A pack that targets 0.2.
    V0_2(v0_2::PromptPack),
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

/// The adapter from 0.2's types into the host's (0.1's): the types 0.2 kept
/// from 0.1 are the same records, generated twice.
pub mod from_v0_2 {
    use super::{PromptAnswer, provider as host, provider_v0_2 as v2};

    /// A 0.2 pack's `list-prompts` result, as the host's prompts.
    pub fn prompts(prompts: Vec<v2::Prompt>) -> Vec<host::Prompt> {
        prompts.into_iter().map(prompt).collect()
    }

    fn prompt(prompt: v2::Prompt) -> host::Prompt {
        host::Prompt {
            name: prompt.name,
            title: prompt.title,
            description: prompt.description,
            arguments: prompt.arguments.into_iter().map(prompt_argument).collect(),
            icons: prompt.icons.into_iter().map(icon).collect(),
        }
    }

    fn prompt_argument(argument: v2::PromptArgument) -> host::PromptArgument {
        host::PromptArgument { name: argument.name, title: argument.title, description: argument.description, required: argument.required }
    }

    fn icon(icon: v2::Icon) -> host::Icon {
        host::Icon {
            src: icon.src,
            mime_type: icon.mime_type,
            sizes: icon.sizes,
            theme: icon.theme.map(|theme| match theme {
                v2::IconTheme::Light => host::IconTheme::Light,
                v2::IconTheme::Dark => host::IconTheme::Dark,
            }),
        }
    }

    /// A 0.2 pack's `get-prompt` answer, as the host's [`PromptAnswer`].
    pub fn answer(answer: v2::PromptAnswer) -> PromptAnswer {
        match answer {
            v2::PromptAnswer::Reply(reply) => PromptAnswer::Reply(self::reply(reply)),
            v2::PromptAnswer::InputRequired(input) => PromptAnswer::InputRequired(input),
        }
    }

    fn reply(reply: v2::PromptReply) -> host::PromptReply {
        host::PromptReply { description: reply.description, messages: reply.messages.into_iter().map(message).collect() }
    }

    fn message(message: v2::Message) -> host::Message {
        host::Message { role: role(message.role), content: content(message.content) }
    }

    fn role(role: v2::Role) -> host::Role {
        match role {
            v2::Role::User => host::Role::User,
            v2::Role::Assistant => host::Role::Assistant,
        }
    }

    fn annotations(annotations: v2::Annotations) -> host::Annotations {
        host::Annotations {
            audience: annotations.audience.into_iter().map(role).collect(),
            priority: annotations.priority,
            last_modified: annotations.last_modified,
        }
    }

    fn media(media: v2::MediaContent) -> host::MediaContent {
        host::MediaContent { data: media.data, mime_type: media.mime_type, annotations: media.annotations.map(annotations) }
    }

    fn content(content: v2::Content) -> host::Content {
        match content {
            v2::Content::Text(text) => {
                host::Content::Text(host::TextContent { text: text.text, annotations: text.annotations.map(annotations) })
            }
            v2::Content::Image(image) => host::Content::Image(media(image)),
            v2::Content::Audio(audio) => host::Content::Audio(media(audio)),
            v2::Content::Resource(resource) => host::Content::Resource(host::EmbeddedResource {
                uri: resource.uri,
                mime_type: resource.mime_type,
                body: match resource.body {
                    v2::ResourceBody::Text(text) => host::ResourceBody::Text(text),
                    v2::ResourceBody::Blob(blob) => host::ResourceBody::Blob(blob),
                },
                annotations: resource.annotations.map(annotations),
            }),
            v2::Content::ResourceLink(link) => host::Content::ResourceLink(host::ResourceLink {
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

    /// A 0.2 pack's prompt error, as the host's.
    pub fn error(error: v2::PromptError) -> host::PromptError {
        match error {
            v2::PromptError::NotFound => host::PromptError::NotFound,
            v2::PromptError::InvalidArguments(message) => host::PromptError::InvalidArguments(message),
            v2::PromptError::Internal(message) => host::PromptError::Internal(message),
        }
    }

    /// A 0.2 pack's completion, as the host's.
    pub fn completion(completion: v2::Completion) -> host::Completion {
        host::Completion { values: completion.values, total: completion.total, has_more: completion.has_more }
    }

    /// Arguments the other way: from the host to a 0.2 pack.
    pub fn arguments(arguments: &[host::Argument]) -> Vec<v2::Argument> {
        arguments.iter().map(|argument| v2::Argument { name: argument.name.clone(), value: argument.value.clone() }).collect()
    }
}
