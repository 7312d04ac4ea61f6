//! The edge between the WIT packages in `wit/` and the host's own model
//! ([`crate::model`]): one module per version the host accepts, each holding
//! that version's generated bindings and the one adapter from its types into
//! the model (0.1 in `wit/`, [`v0_1`]; 0.2 in `wit/0.2/`, [`v0_2`]; 0.3 in
//! `wit/0.3/`, [`v0_3`]).
//!
//! A version's module links a pack ([`LinkedPack`]) and calls its exports
//! ([`PackExports`]); nothing above this module knows which version a pack
//! targets, except to report it ([`WitVersion`]) and to ask what it can do
//! ([`WitVersion::can_ask_for_input`] and its kin). Adding a version is one
//! new module here, and one variant of [`WitVersion`].
//!
//! Every export is called asynchronously, so that a plugin's call yields to
//! the runtime (see `sandbox`) instead of holding a worker thread.

use std::future::Future;
use std::pin::Pin;

use wasmtime::Store;
use wasmtime::component::{Component, InstancePre};

use crate::model;

pub mod v0_1;
pub mod v0_2;
pub mod v0_3;
pub mod v0_4;

/// The WIT package of the contract, without its version: every interface a
/// pack exports for the host to call is one of its.
pub const PACKAGE: &str = "prompt-host:prompts";

/// The fully qualified name of the interface every pack must export, without
/// its version (an interface of [`PACKAGE`]).
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
    /// Adds the optional `content` interface: skills and static resources.
    #[serde(rename = "0.4")]
    V0_4,
}

impl WitVersion {
    /// Every version this host accepts, oldest first.
    pub const ACCEPTED: [WitVersion; 4] = [WitVersion::V0_1, WitVersion::V0_2, WitVersion::V0_3, WitVersion::V0_4];

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
            WitVersion::V0_4 => "0.4.",
        }
    }

    /// The version as people read it: `0.2`.
    pub fn as_str(self) -> &'static str {
        match self {
            WitVersion::V0_1 => "0.1",
            WitVersion::V0_2 => "0.2",
            WitVersion::V0_3 => "0.3",
            WitVersion::V0_4 => "0.4",
        }
    }

    /// Whether packs of this version can answer `input-required`.
    pub fn can_ask_for_input(self) -> bool {
        self >= WitVersion::V0_2
    }

    /// Whether packs of this version say what they are (`describe-pack`).
    pub fn describes_itself(self) -> bool {
        self >= WitVersion::V0_2
    }

    /// Whether packs of this version declare their arguments' kinds,
    /// defaults and examples, which the host checks and enforces.
    pub fn declares_argument_kinds(self) -> bool {
        self >= WitVersion::V0_3
    }

    /// Whether packs of this version may be granted folders, HTTP origins
    /// and named values (and so are linked with `wasi:http`).
    pub fn can_be_granted(self) -> bool {
        self >= WitVersion::V0_3
    }

    /// Links a component that targets this version (instantiated through
    /// `instance_pre`), checking that it exports what the version declares.
    /// The error says what is missing or of the wrong type.
    pub fn link<T: Send + 'static>(self, component: &Component, instance_pre: InstancePre<T>) -> Result<Linked<T>, String> {
        match self {
            WitVersion::V0_1 => v0_1::link(instance_pre),
            WitVersion::V0_2 => v0_2::link(instance_pre),
            WitVersion::V0_3 => v0_3::link(component, instance_pre),
            WitVersion::V0_4 => v0_4::link(component, instance_pre),
        }
    }
}

impl std::fmt::Display for WitVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call into a pack's instance, as the host's types.
pub type Call<'a, R> = Pin<Box<dyn Future<Output = wasmtime::Result<R>> + Send + 'a>>;

/// A call a version lacks: it answers `None` at once.
pub fn absent<'a, R: Send + 'a>() -> Call<'a, Option<R>> {
    Box::pin(std::future::ready(Ok(None)))
}

/// A pack's component, linked and ready to instantiate.
pub type Linked<T> = std::sync::Arc<dyn LinkedPack<T>>;

/// What a version's bindings do with a linked pack.
pub trait LinkedPack<T: 'static>: Send + Sync {
    /// The version the pack targets.
    fn version(&self) -> WitVersion;

    /// A fresh instance of the pack, in `store`.
    fn instantiate<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Box<dyn PackExports<T>>>;
}

/// What a pack says of itself: what it is, and what it would like to be
/// granted (0.3 on).
#[derive(Debug, Clone)]
pub struct Description {
    /// What it is.
    pub info: model::PackInfo,
    /// What it wants to see.
    pub wants: Option<model::Wants>,
}

/// What a version's bindings call in one instance of a pack. A function the
/// version lacks answers `None` at once, without entering the instance.
pub trait PackExports<T: 'static>: Send + Sync {
    /// The version the pack targets.
    fn version(&self) -> WitVersion;

    /// `describe-pack` (0.2 on).
    fn describe_pack<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Option<Description>>;

    /// `list-prompts`.
    fn list_prompts<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Vec<model::Prompt>>;

    /// Whether the pack exports `asking` (0.3.1 on): whether
    /// [`PackExports::prompts_that_ask`] calls it.
    fn exports_asking(&self) -> bool {
        false
    }

    /// `asking`'s `prompts-that-ask` (0.3.1 on, when the pack exports it).
    fn prompts_that_ask<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Option<Vec<String>>>;

    /// Whether the pack exports `content` (0.4): skills and static resources.
    fn exports_content(&self) -> bool {
        false
    }

    /// Its skills' files and static resources, when it exports `content`,
    /// copied out of the pack within `copy_budget` bytes for both calls.
    fn content<'a>(&'a self, _store: &'a mut Store<T>, _copy_budget: usize) -> Call<'a, Option<model::PackContent>> {
        absent()
    }

    /// `get-prompt`, with the answers to the forms the pack asked for, if
    /// any (a pack that cannot ask never gets any).
    fn get_prompt<'a>(
        &'a self,
        store: &'a mut Store<T>,
        name: &'a str,
        arguments: &'a [model::Argument],
        input: Option<&'a model::Input>,
    ) -> Call<'a, Result<model::PromptAnswer, model::PromptError>>;

    /// `complete`.
    fn complete<'a>(
        &'a self,
        store: &'a mut Store<T>,
        prompt: &'a str,
        argument: &'a str,
        value: &'a str,
        context: &'a [model::Argument],
    ) -> Call<'a, Result<model::Completion, model::PromptError>>;
}

/// The conversions into the model every version shares: the types 0.1
/// declared, kept by every later version, are the same records generated
/// once per version. Expanded in a version's module where `v` names its
/// `prompt_provider`, and which defines `prompt_argument`.
macro_rules! kept_from_v0_1 {
    () => {
        fn prompt(prompt: v::Prompt) -> model::Prompt {
            model::Prompt {
                name: prompt.name,
                title: prompt.title,
                description: prompt.description,
                arguments: prompt.arguments.into_iter().map(prompt_argument).collect(),
                icons: prompt.icons.into_iter().map(icon).collect(),
            }
        }

        fn icon(icon: v::Icon) -> model::Icon {
            model::Icon {
                src: icon.src,
                mime_type: icon.mime_type,
                sizes: icon.sizes,
                theme: icon.theme.map(|theme| match theme {
                    v::IconTheme::Light => model::IconTheme::Light,
                    v::IconTheme::Dark => model::IconTheme::Dark,
                }),
            }
        }

        fn reply(reply: v::PromptReply) -> model::PromptReply {
            model::PromptReply { description: reply.description, messages: reply.messages.into_iter().map(message).collect() }
        }

        fn message(message: v::Message) -> model::Message {
            model::Message { role: role(message.role), content: content(message.content) }
        }

        fn role(role: v::Role) -> model::Role {
            match role {
                v::Role::User => model::Role::User,
                v::Role::Assistant => model::Role::Assistant,
            }
        }

        fn annotations(annotations: v::Annotations) -> model::Annotations {
            model::Annotations {
                audience: annotations.audience.into_iter().map(role).collect(),
                priority: annotations.priority,
                last_modified: annotations.last_modified,
            }
        }

        fn media(media: v::MediaContent) -> model::MediaContent {
            model::MediaContent { data: media.data, mime_type: media.mime_type, annotations: media.annotations.map(annotations) }
        }

        fn content(content: v::Content) -> model::Content {
            match content {
                v::Content::Text(text) => {
                    model::Content::Text(model::TextContent { text: text.text, annotations: text.annotations.map(annotations) })
                }
                v::Content::Image(image) => model::Content::Image(media(image)),
                v::Content::Audio(audio) => model::Content::Audio(media(audio)),
                v::Content::Resource(resource) => model::Content::Resource(model::EmbeddedResource {
                    uri: resource.uri,
                    mime_type: resource.mime_type,
                    body: match resource.body {
                        v::ResourceBody::Text(text) => model::ResourceBody::Text(text),
                        v::ResourceBody::Blob(blob) => model::ResourceBody::Blob(blob),
                    },
                    annotations: resource.annotations.map(annotations),
                }),
                v::Content::ResourceLink(link) => model::Content::ResourceLink(model::ResourceLink {
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

        fn error(error: v::PromptError) -> model::PromptError {
            match error {
                v::PromptError::NotFound => model::PromptError::NotFound,
                v::PromptError::InvalidArguments(message) => model::PromptError::InvalidArguments(message),
                v::PromptError::Internal(message) => model::PromptError::Internal(message),
            }
        }

        fn completion(completion: v::Completion) -> model::Completion {
            model::Completion { values: completion.values, total: completion.total, has_more: completion.has_more }
        }

        /// Arguments the other way: from the host to the pack.
        fn arguments(arguments: &[model::Argument]) -> Vec<v::Argument> {
            arguments.iter().map(|argument| v::Argument { name: argument.name.clone(), value: argument.value.clone() }).collect()
        }
    };
}

/// The conversions of the input-required conversation every version from
/// 0.2 on shares, both ways. Expanded where [`kept_from_v0_1`] is.
macro_rules! asking_since_v0_2 {
    () => {
        fn answer(answer: v::PromptAnswer) -> model::PromptAnswer {
            match answer {
                v::PromptAnswer::Reply(reply) => model::PromptAnswer::Reply(self::reply(reply)),
                v::PromptAnswer::InputRequired(input) => model::PromptAnswer::InputRequired(input_required(input)),
            }
        }

        fn input_required(input: v::InputRequired) -> model::InputRequired {
            model::InputRequired { forms: input.forms.into_iter().map(form).collect(), state: input.state }
        }

        fn form(form: v::Form) -> model::Form {
            model::Form { key: form.key, message: form.message, fields: form.fields.into_iter().map(field).collect() }
        }

        fn field(field: v::FormField) -> model::FormField {
            let kind = match field.kind {
                v::FieldKind::String(default) => model::FieldKind::String(default),
                v::FieldKind::Number(default) => model::FieldKind::Number(default),
                v::FieldKind::Integer(default) => model::FieldKind::Integer(default),
                v::FieldKind::Boolean(default) => model::FieldKind::Boolean(default),
                v::FieldKind::Enum(choices) => {
                    model::FieldKind::Enum(model::EnumField { choices: choices.choices, default: choices.default })
                }
            };
            model::FormField { name: field.name, title: field.title, description: field.description, kind, required: field.required }
        }

        /// The user's answers, from the host to the pack.
        fn input(input: &model::Input) -> v::Input {
            let value = |value: &model::FieldValue| match value {
                model::FieldValue::String(text) => v::FieldValue::String(text.clone()),
                model::FieldValue::Number(number) => v::FieldValue::Number(*number),
                model::FieldValue::Integer(integer) => v::FieldValue::Integer(*integer),
                model::FieldValue::Boolean(boolean) => v::FieldValue::Boolean(*boolean),
            };
            let response = |response: &model::FormResponse| match response {
                model::FormResponse::Accept(answers) => v::FormResponse::Accept(
                    answers.iter().map(|answer| v::FieldAnswer { name: answer.name.clone(), value: value(&answer.value) }).collect(),
                ),
                model::FormResponse::Decline => v::FormResponse::Decline,
                model::FormResponse::Cancel => v::FormResponse::Cancel,
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
    };
}

/// The calls every version makes alike, in `impl PackExports<T> for Pack`
/// of a version's module, where `Pack`'s first field is the generated
/// bindings of an instance: `list-prompts` and `complete`, whose types every
/// version kept from 0.1.
macro_rules! calls_kept_from_v0_1 {
    () => {
        fn list_prompts<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Vec<model::Prompt>> {
            Box::pin(async move {
                let prompts = self.0.prompt_host_prompts_prompt_provider().call_list_prompts(store).await?;
                Ok(prompts.into_iter().map(prompt).collect())
            })
        }

        fn complete<'a>(
            &'a self,
            store: &'a mut Store<T>,
            prompt: &'a str,
            argument: &'a str,
            value: &'a str,
            context: &'a [model::Argument],
        ) -> Call<'a, Result<model::Completion, model::PromptError>> {
            Box::pin(async move {
                let context = arguments(context);
                let provider = self.0.prompt_host_prompts_prompt_provider();
                let answer = provider.call_complete(store, prompt, argument, value, &context).await?;
                Ok(answer.map(completion).map_err(error))
            })
        }
    };
}

/// `get-prompt` as every version from 0.2 on calls it, with the answers to
/// the forms the pack asked for; expanded where [`calls_kept_from_v0_1`] is.
macro_rules! get_prompt_since_v0_2 {
    () => {
        fn get_prompt<'a>(
            &'a self,
            store: &'a mut Store<T>,
            name: &'a str,
            arguments: &'a [model::Argument],
            input: Option<&'a model::Input>,
        ) -> Call<'a, Result<model::PromptAnswer, model::PromptError>> {
            Box::pin(async move {
                let (arguments, input) = (self::arguments(arguments), input.map(self::input));
                let provider = self.0.prompt_host_prompts_prompt_provider();
                let answer = provider.call_get_prompt(store, name, &arguments, input.as_ref()).await?;
                Ok(answer.map(self::answer).map_err(error))
            })
        }
    };
}

/// A version whose world bindgen! links whole (0.1, 0.2): its `link`, and
/// its linked and instantiated pack, `Pre` and `Pack`. Expanded in the
/// version's module, with the version's [`WitVersion`] variant.
macro_rules! linked_by_bindgen {
    ($version:ident) => {
        /// Links a pack of this version.
        pub(super) fn link<T: Send + 'static>(instance_pre: InstancePre<T>) -> Result<Linked<T>, String> {
            let pre = generated::PromptPackPre::new(instance_pre).map_err(|e| format!("{e:#}"))?;
            Ok(std::sync::Arc::new(Pre(pre)))
        }

        struct Pre<T: 'static>(generated::PromptPackPre<T>);

        impl<T: Send + 'static> LinkedPack<T> for Pre<T> {
            fn version(&self) -> WitVersion {
                WitVersion::$version
            }

            fn instantiate<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Box<dyn PackExports<T>>> {
                Box::pin(async move {
                    let pack = self.0.instantiate_async(store).await?;
                    Ok(Box::new(Pack(pack)) as Box<dyn PackExports<T>>)
                })
            }
        }

        struct Pack(generated::PromptPack);
    };
}

/// What 0.3 added and every later version keeps: typed arguments, and the
/// pack's description with what it wants to see.
macro_rules! typed_since_v0_3 {
    () => {
        fn prompt_argument(argument: v::PromptArgument) -> model::PromptArgument {
            model::PromptArgument {
                name: argument.name,
                title: argument.title,
                description: argument.description,
                required: argument.required,
                kind: argument.kind.map(argument_kind),
                default: argument.default,
                examples: argument.examples,
            }
        }

        fn argument_kind(kind: v::ArgumentKind) -> model::ArgumentKind {
            match kind {
                v::ArgumentKind::Text(text) => {
                    model::ArgumentKind::Text(model::TextKind { max_length: text.max_length, pattern: text.pattern })
                }
                v::ArgumentKind::Integer(bounds) => model::ArgumentKind::Integer(model::IntegerKind { min: bounds.min, max: bounds.max }),
                v::ArgumentKind::Number(bounds) => model::ArgumentKind::Number(model::NumberKind { min: bounds.min, max: bounds.max }),
                v::ArgumentKind::Boolean => model::ArgumentKind::Boolean,
                v::ArgumentKind::Choice(choices) => model::ArgumentKind::Choice(choices),
                v::ArgumentKind::Uri(uri) => model::ArgumentKind::Uri(model::UriKind { schemes: uri.schemes }),
            }
        }

        fn description(info: v::PackInfo) -> Description {
            let v::PackInfo { name, version, description, authors, license, homepage, repository, wants } = info;
            let folders = wants
                .folders
                .into_iter()
                .map(|folder| model::WantedFolder { name: folder.name, description: folder.description })
                .collect();
            Description {
                info: model::PackInfo { name, version, description, authors, license, homepage, repository },
                wants: Some(model::Wants { folders, origins: wants.origins, env: wants.env }),
            }
        }
    };
}

use asking_since_v0_2;
use calls_kept_from_v0_1;
use get_prompt_since_v0_2;
use kept_from_v0_1;
use linked_by_bindgen;
use typed_since_v0_3;

#[cfg(test)]
mod tests {
    #[test]
    fn the_provider_interface_is_an_interface_of_the_package() {
        assert_eq!(super::PROVIDER_INTERFACE.split_once('/').map(|(package, _)| package), Some(super::PACKAGE));
    }
}
