//! Write prompt packs for [prompt-host] in Rust.
//!
//! A prompt pack is a WebAssembly component that exports the
//! `prompt-host:prompts/prompt-provider` interface (see `wit/` at the root of
//! the repository). This crate generates the bindings for you and adds small
//! helpers for the common work: declaring prompts, reading arguments, building
//! messages, answering completions and, in WIT 0.2, asking the user for input
//! and saying what the pack is.
//!
//! ## Two WIT versions
//!
//! A pack chooses the WIT version it targets by what it imports and exports;
//! the types and helpers are the same for both:
//! - **0.2** (`use prompt_pack::v0_2::*;`, `prompt_pack::v0_2::export_pack!`):
//!   `get-prompt` may answer [`InputRequired`], forms for the user to fill
//!   in before the pack replies, and the pack says what it is
//!   ([`PackInfo`]). New packs should target it.
//! - **0.1** (`use prompt_pack::*;`, `prompt_pack::export_pack!`): replies
//!   only. Packs written against it keep building and working unchanged.
//!
//! There are two ways to write a pack:
//! - **templates** ([`TemplatePack`]): declare each prompt once with its
//!   arguments and the messages it replies with, `{argument}` placeholders
//!   included, in text, embedded resources ([`Template::resource`]) and
//!   resource links ([`Template::link`]); checking arguments, rendering,
//!   completing and (in 0.2) asking for a missing argument
//!   ([`Template::ask_for`]) come for free. A prompt whose reply needs
//!   logic stays a template with [`Template::reply_with`] (and
//!   [`Template::complete_with`]): its declaration is still checked by
//!   [`TemplatePack::check`] and its arguments before the code runs.
//! - **code** ([`Guest`]): implement `list-prompts`, `get-prompt` and
//!   `complete` yourself, with the helpers below, when a pack needs more
//!   (images, audio, forms of its own).
//!
//! A 0.2 pack in code, which asks for a name when the client gave none:
//!
//! ```
//! use prompt_pack::v0_2::*;
//!
//! struct Pack;
//!
//! impl Guest for Pack {
//!     fn describe_pack() -> PackInfo {
//!         // name, version, description, authors, license, homepage and
//!         // repository, from this crate's Cargo.toml.
//!         prompt_pack::cargo_pack_info!()
//!     }
//!
//!     fn list_prompts() -> Vec<Prompt> {
//!         vec![prompt("greet", "Greets someone").argument(optional("name", "Who to greet"))]
//!     }
//!
//!     fn get_prompt(name: String, arguments: Vec<Argument>, input: Option<Input>) -> Result<PromptAnswer, PromptError> {
//!         if name != "greet" {
//!             return Err(PromptError::NotFound);
//!         }
//!         let answered = input.as_ref().and_then(|input| input.value("who", "name")).and_then(FieldValue::as_str);
//!         match Arguments::from(arguments).get("name").or(answered) {
//!             Some(who) => Ok(reply([user_text(format!("Say hello to {who}."))]).into()),
//!             None => Ok(ask([form("who", "Whom should I greet?").field(string_field("name", "Their name"))]).into()),
//!         }
//!     }
//!
//!     fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
//!         Ok(no_completions())
//!     }
//! }
//!
//! prompt_pack::v0_2::export_pack!(Pack);
//!
//! // The functions the host calls can be called natively, in tests:
//! let answer = Pack::get_prompt("greet".into(), vec![argument("name", "Ada")], None).unwrap();
//! assert_eq!(answer.into_reply().unwrap().messages, [user_text("Say hello to Ada.")]);
//! // Without a name, the user is asked; the host calls again with the answer.
//! let asked = Pack::get_prompt("greet".into(), vec![], None).unwrap().into_input_required().unwrap();
//! assert_eq!(asked.forms[0].key, "who");
//! let input = answers([accepted("who", [("name", "Grace")])]);
//! let answer = Pack::get_prompt("greet".into(), vec![], Some(input)).unwrap();
//! assert_eq!(answer.into_reply().unwrap().messages, [user_text("Say hello to Grace.")]);
//! assert_eq!(Pack::describe_pack().name, "prompt-pack");
//! ```
//!
//! The same pack on 0.1, which can only refuse a request without a name:
//!
//! ```
//! use prompt_pack::*;
//!
//! struct Pack;
//!
//! impl Guest for Pack {
//!     fn list_prompts() -> Vec<Prompt> {
//!         vec![prompt("greet", "Greets someone").argument(required("name", "Who to greet"))]
//!     }
//!
//!     fn get_prompt(name: String, arguments: Vec<Argument>) -> Result<PromptReply, PromptError> {
//!         let arguments = Arguments::from(arguments);
//!         match name.as_str() {
//!             "greet" => Ok(reply([user_text(format!("Say hello to {}.", arguments.require("name")?))])),
//!             _ => Err(PromptError::NotFound),
//!         }
//!     }
//!
//!     fn complete(_: String, _: String, _: String, _: Vec<Argument>) -> Result<Completion, PromptError> {
//!         Ok(no_completions())
//!     }
//! }
//!
//! prompt_pack::export_pack!(Pack);
//!
//! let reply = Pack::get_prompt("greet".into(), vec![argument("name", "Ada")]).unwrap();
//! assert_eq!(reply.messages, [user_text("Say hello to Ada.")]);
//! assert_eq!(Pack::get_prompt("wave".into(), vec![]), Err(PromptError::NotFound));
//! ```
//!
//! Build it with `cargo build --release --target wasm32-wasip2`; the
//! `.wasm` file that lands in `target/wasm32-wasip2/release/` is the pack.
//! `prompt-host new NAME --lang rust` sets up a pack that builds this way, and
//! `prompt-host inspect` and `prompt-host get` check it.
//!
//! [prompt-host]: https://github.com/prompt-host/prompt-host

/// The bindings generated from the WIT package. Most packs only need the
/// re-exports at the crate root.
#[doc(hidden)]
pub mod bindings {
    wit_bindgen::generate!({
        path: "../../wit",
        world: "prompt-pack",
        pub_export_macro: true,
        export_macro_name: "export_pack",
        default_bindings_module: "prompt_pack::bindings",
        additional_derives: [PartialEq],
    });
}

/// The bindings generated from WIT 0.2, whose types that 0.1 has too are
/// 0.1's (`with`): the two versions share one set of types and helpers.
/// The world is renamed so that its export macro does not collide with 0.1's.
#[doc(hidden)]
pub mod bindings_v0_2 {
    wit_bindgen::generate!({
        inline: "package prompt-pack:sdk; world prompt-pack-v0-2 { include prompt-host:prompts/prompt-pack@0.2.0; }",
        path: "../../wit/0.2",
        world: "prompt-pack-v0-2",
        pub_export_macro: true,
        export_macro_name: "export_pack_v0_2",
        default_bindings_module: "prompt_pack::bindings_v0_2",
        additional_derives: [PartialEq],
        with: {
            "prompt-host:prompts/prompt-provider@0.2.0/role": crate::Role,
            "prompt-host:prompts/prompt-provider@0.2.0/icon-theme": crate::IconTheme,
            "prompt-host:prompts/prompt-provider@0.2.0/icon": crate::Icon,
            "prompt-host:prompts/prompt-provider@0.2.0/prompt-argument": crate::PromptArgument,
            "prompt-host:prompts/prompt-provider@0.2.0/prompt": crate::Prompt,
            "prompt-host:prompts/prompt-provider@0.2.0/annotations": crate::Annotations,
            "prompt-host:prompts/prompt-provider@0.2.0/text-content": crate::TextContent,
            "prompt-host:prompts/prompt-provider@0.2.0/media-content": crate::MediaContent,
            "prompt-host:prompts/prompt-provider@0.2.0/resource-body": crate::ResourceBody,
            "prompt-host:prompts/prompt-provider@0.2.0/embedded-resource": crate::EmbeddedResource,
            "prompt-host:prompts/prompt-provider@0.2.0/resource-link": crate::ResourceLink,
            "prompt-host:prompts/prompt-provider@0.2.0/content": crate::Content,
            "prompt-host:prompts/prompt-provider@0.2.0/message": crate::Message,
            "prompt-host:prompts/prompt-provider@0.2.0/prompt-reply": crate::PromptReply,
            "prompt-host:prompts/prompt-provider@0.2.0/argument": crate::Argument,
            "prompt-host:prompts/prompt-provider@0.2.0/prompt-error": crate::PromptError,
            "prompt-host:prompts/prompt-provider@0.2.0/completion": crate::Completion,
        },
    });
}

/// The bindings generated from WIT 0.3, whose types that 0.1 or 0.2 has too
/// are theirs (`with`); what 0.3 adds (argument kinds, what a pack asks to
/// see) is its own. The world is renamed so that its export macro does not
/// collide with the others'.
#[doc(hidden)]
pub mod bindings_v0_3 {
    wit_bindgen::generate!({
        inline: "package prompt-pack:sdk3; world prompt-pack-v0-3 { include prompt-host:prompts/prompt-pack-that-asks@0.3.1; }",
        path: "../../wit/0.3",
        world: "prompt-pack-v0-3",
        pub_export_macro: true,
        export_macro_name: "export_pack_v0_3",
        default_bindings_module: "prompt_pack::bindings_v0_3",
        additional_derives: [PartialEq],
        with: {
            "prompt-host:prompts/prompt-provider@0.3.1/role": crate::Role,
            "prompt-host:prompts/prompt-provider@0.3.1/icon-theme": crate::IconTheme,
            "prompt-host:prompts/prompt-provider@0.3.1/icon": crate::Icon,
            "prompt-host:prompts/prompt-provider@0.3.1/annotations": crate::Annotations,
            "prompt-host:prompts/prompt-provider@0.3.1/text-content": crate::TextContent,
            "prompt-host:prompts/prompt-provider@0.3.1/media-content": crate::MediaContent,
            "prompt-host:prompts/prompt-provider@0.3.1/resource-body": crate::ResourceBody,
            "prompt-host:prompts/prompt-provider@0.3.1/embedded-resource": crate::EmbeddedResource,
            "prompt-host:prompts/prompt-provider@0.3.1/resource-link": crate::ResourceLink,
            "prompt-host:prompts/prompt-provider@0.3.1/content": crate::Content,
            "prompt-host:prompts/prompt-provider@0.3.1/message": crate::Message,
            "prompt-host:prompts/prompt-provider@0.3.1/prompt-reply": crate::PromptReply,
            "prompt-host:prompts/prompt-provider@0.3.1/argument": crate::Argument,
            "prompt-host:prompts/prompt-provider@0.3.1/prompt-error": crate::PromptError,
            "prompt-host:prompts/prompt-provider@0.3.1/completion": crate::Completion,
            "prompt-host:prompts/prompt-provider@0.3.1/field-kind": crate::FieldKind,
            "prompt-host:prompts/prompt-provider@0.3.1/enum-field": crate::EnumField,
            "prompt-host:prompts/prompt-provider@0.3.1/form-field": crate::FormField,
            "prompt-host:prompts/prompt-provider@0.3.1/form": crate::Form,
            "prompt-host:prompts/prompt-provider@0.3.1/input-required": crate::InputRequired,
            "prompt-host:prompts/prompt-provider@0.3.1/field-value": crate::FieldValue,
            "prompt-host:prompts/prompt-provider@0.3.1/field-answer": crate::FieldAnswer,
            "prompt-host:prompts/prompt-provider@0.3.1/form-response": crate::FormResponse,
            "prompt-host:prompts/prompt-provider@0.3.1/form-answer": crate::FormAnswer,
            "prompt-host:prompts/prompt-provider@0.3.1/input": crate::Input,
            "prompt-host:prompts/prompt-provider@0.3.1/prompt-answer": crate::PromptAnswer,
        },
    });
}

/// The bindings generated from WIT 0.4, whose `prompt-provider` is 0.3.1's
/// type for type (`with`: every type is 0.3's or older), and which adds the
/// `content` interface: the skills and static resources a pack carries.
#[doc(hidden)]
pub mod bindings_v0_4 {
    wit_bindgen::generate!({
        inline: "package prompt-pack:sdk4; world prompt-pack-v0-4 { include prompt-host:prompts/prompt-pack-with-content@0.4.0; }",
        path: "../../wit/0.4",
        world: "prompt-pack-v0-4",
        pub_export_macro: true,
        export_macro_name: "export_pack_v0_4",
        default_bindings_module: "prompt_pack::bindings_v0_4",
        additional_derives: [PartialEq],
        with: {
            "prompt-host:prompts/prompt-provider@0.4.0/role": crate::Role,
            "prompt-host:prompts/prompt-provider@0.4.0/icon-theme": crate::IconTheme,
            "prompt-host:prompts/prompt-provider@0.4.0/icon": crate::Icon,
            "prompt-host:prompts/prompt-provider@0.4.0/annotations": crate::Annotations,
            "prompt-host:prompts/prompt-provider@0.4.0/text-content": crate::TextContent,
            "prompt-host:prompts/prompt-provider@0.4.0/media-content": crate::MediaContent,
            "prompt-host:prompts/prompt-provider@0.4.0/resource-body": crate::ResourceBody,
            "prompt-host:prompts/prompt-provider@0.4.0/embedded-resource": crate::EmbeddedResource,
            "prompt-host:prompts/prompt-provider@0.4.0/resource-link": crate::ResourceLink,
            "prompt-host:prompts/prompt-provider@0.4.0/content": crate::Content,
            "prompt-host:prompts/prompt-provider@0.4.0/message": crate::Message,
            "prompt-host:prompts/prompt-provider@0.4.0/prompt-reply": crate::PromptReply,
            "prompt-host:prompts/prompt-provider@0.4.0/argument": crate::Argument,
            "prompt-host:prompts/prompt-provider@0.4.0/prompt-error": crate::PromptError,
            "prompt-host:prompts/prompt-provider@0.4.0/completion": crate::Completion,
            "prompt-host:prompts/prompt-provider@0.4.0/field-kind": crate::FieldKind,
            "prompt-host:prompts/prompt-provider@0.4.0/enum-field": crate::EnumField,
            "prompt-host:prompts/prompt-provider@0.4.0/form-field": crate::FormField,
            "prompt-host:prompts/prompt-provider@0.4.0/form": crate::Form,
            "prompt-host:prompts/prompt-provider@0.4.0/input-required": crate::InputRequired,
            "prompt-host:prompts/prompt-provider@0.4.0/field-value": crate::FieldValue,
            "prompt-host:prompts/prompt-provider@0.4.0/field-answer": crate::FieldAnswer,
            "prompt-host:prompts/prompt-provider@0.4.0/form-response": crate::FormResponse,
            "prompt-host:prompts/prompt-provider@0.4.0/form-answer": crate::FormAnswer,
            "prompt-host:prompts/prompt-provider@0.4.0/input": crate::Input,
            "prompt-host:prompts/prompt-provider@0.4.0/prompt-answer": crate::PromptAnswer,
            "prompt-host:prompts/prompt-provider@0.4.0/prompt": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::Prompt,
            "prompt-host:prompts/prompt-provider@0.4.0/prompt-argument": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::PromptArgument,
            "prompt-host:prompts/prompt-provider@0.4.0/argument-kind": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::ArgumentKind,
            "prompt-host:prompts/prompt-provider@0.4.0/text-kind": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::TextKind,
            "prompt-host:prompts/prompt-provider@0.4.0/integer-kind": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::IntegerKind,
            "prompt-host:prompts/prompt-provider@0.4.0/number-kind": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::NumberKind,
            "prompt-host:prompts/prompt-provider@0.4.0/uri-kind": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::UriKind,
            "prompt-host:prompts/prompt-provider@0.4.0/wanted-folder": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::WantedFolder,
            "prompt-host:prompts/prompt-provider@0.4.0/wants": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::Wants,
            "prompt-host:prompts/prompt-provider@0.4.0/pack-info": crate::bindings_v0_3::exports::prompt_host::prompts::prompt_provider::PackInfo,
        },
    });
}

/// Exports a type implementing [`Guest`] (or [`TemplatePack`]) as the pack's
/// `prompt-provider`, WIT 0.1. For 0.2, see [`v0_2::export_pack`]; for 0.3,
/// [`v0_3::export_pack`].
pub use bindings::export_pack;

/// `prompt(name, description)` and the builder methods of a prompt, for
/// the prompt and argument types of a WIT version (0.1's, which 0.2
/// shares, and 0.3's): one definition for both.
macro_rules! prompt_builder {
    ($prompt:ident, $argument:ident) => {
        /// Declares a prompt with a description and no arguments yet.
        pub fn prompt(name: &str, description: &str) -> $prompt {
            $prompt {
                name: name.to_string(),
                title: None,
                description: Some(description.to_string()),
                arguments: Vec::new(),
                icons: Vec::new(),
            }
        }

        impl $prompt {
            /// Sets the human-readable title.
            pub fn title(mut self, title: &str) -> Self {
                self.title = Some(title.to_string());
                self
            }

            /// Adds an argument, after the ones already declared.
            pub fn argument(mut self, argument: $argument) -> Self {
                self.arguments.push(argument);
                self
            }

            /// Adds an icon.
            pub fn icon(mut self, icon: $crate::Icon) -> Self {
                self.icons.push(icon);
                self
            }
        }
    };
}

mod input;
mod template;
pub mod v0_3;
pub mod v0_4;

pub use input::*;
pub use template::{Template, TemplateArgument, TemplateMistake, TemplatePack, check_templates, template};

/// Everything a pack targeting WIT 0.2 needs: `use prompt_pack::v0_2::*;`.
/// The same types and helpers as the crate root, except that [`Guest`] and
/// [`export_pack!`] are 0.2's.
pub mod v0_2 {
    pub use crate::*;

    /// What a 0.2 pack implements (or a [`TemplatePack`] that also
    /// implements [`DescribePack`] gets): 0.1's functions, with `get-prompt`
    /// taking the user's answers and returning a [`PromptAnswer`], and
    /// `describe-pack`.
    pub use crate::bindings_v0_2::exports::prompt_host::prompts::prompt_provider::Guest;

    /// Exports a type implementing the 0.2 [`Guest`] (or a [`TemplatePack`]
    /// that implements [`DescribePack`]) as the pack's `prompt-provider`,
    /// WIT 0.2.
    pub use crate::bindings_v0_2::export_pack_v0_2 as export_pack;
}

pub use bindings::exports::prompt_host::prompts::prompt_provider::{
    Annotations, Argument, Completion, Content, EmbeddedResource, Guest, Icon, IconTheme, MediaContent, Message, Prompt, PromptArgument,
    PromptError, PromptReply, ResourceBody, ResourceLink, Role, TextContent,
};

prompt_builder!(Prompt, PromptArgument);

/// Declares an argument a client must pass.
pub fn required(name: &str, description: &str) -> PromptArgument {
    PromptArgument { name: name.to_string(), title: None, description: Some(description.to_string()), required: true }
}

/// Declares an argument a client may leave out.
pub fn optional(name: &str, description: &str) -> PromptArgument {
    PromptArgument { required: false, ..required(name, description) }
}

/// The arguments of one request, looked up by name.
pub struct Arguments(Vec<Argument>);

impl From<Vec<Argument>> for Arguments {
    fn from(arguments: Vec<Argument>) -> Self {
        Arguments(arguments)
    }
}

impl Arguments {
    /// The value of `name`, if the client passed it.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|argument| argument.name == name).map(|argument| argument.value.as_str())
    }

    /// The value of `name`, or an invalid-arguments error naming it.
    pub fn require(&self, name: &str) -> Result<&str, PromptError> {
        self.get(name).ok_or_else(|| PromptError::InvalidArguments(format!("missing required argument '{name}'")))
    }
}

/// An argument as a client sends it: for calling a pack's functions in tests.
pub fn argument(name: &str, value: &str) -> Argument {
    Argument { name: name.to_string(), value: value.to_string() }
}

/// A reply made of these messages, with no reply-specific description.
pub fn reply(messages: impl IntoIterator<Item = Message>) -> PromptReply {
    PromptReply { description: None, messages: messages.into_iter().collect() }
}

impl PromptReply {
    /// Sets the description of this reply.
    pub fn described(mut self, description: &str) -> Self {
        self.description = Some(description.to_string());
        self
    }
}

/// A message with the given role and content.
pub fn message(role: Role, content: Content) -> Message {
    Message { role, content }
}

/// Text content.
pub fn text(text: impl Into<String>) -> Content {
    Content::Text(TextContent { text: text.into(), annotations: None })
}

/// A user message of plain text.
pub fn user_text(text_: impl Into<String>) -> Message {
    message(Role::User, text(text_))
}

/// An assistant message of plain text.
pub fn assistant_text(text_: impl Into<String>) -> Message {
    message(Role::Assistant, text(text_))
}

/// Image content from raw bytes; `mime_type` must start with `image/`.
pub fn image(data: impl Into<Vec<u8>>, mime_type: &str) -> Content {
    Content::Image(MediaContent { data: data.into(), mime_type: mime_type.to_string(), annotations: None })
}

/// Audio content from raw bytes; `mime_type` must start with `audio/`.
pub fn audio(data: impl Into<Vec<u8>>, mime_type: &str) -> Content {
    Content::Audio(MediaContent { data: data.into(), mime_type: mime_type.to_string(), annotations: None })
}

/// An embedded resource with textual contents.
pub fn text_resource(uri: impl Into<String>, mime_type: &str, contents: impl Into<String>) -> Content {
    Content::Resource(EmbeddedResource {
        uri: uri.into(),
        mime_type: Some(mime_type.to_string()),
        body: ResourceBody::Text(contents.into()),
        annotations: None,
    })
}

/// An embedded resource with binary contents.
pub fn blob_resource(uri: impl Into<String>, mime_type: &str, contents: impl Into<Vec<u8>>) -> Content {
    Content::Resource(EmbeddedResource {
        uri: uri.into(),
        mime_type: Some(mime_type.to_string()),
        body: ResourceBody::Blob(contents.into()),
        annotations: None,
    })
}

/// A link to a resource the client can fetch itself.
pub fn resource_link(uri: impl Into<String>, name: &str, description: &str) -> Content {
    Content::ResourceLink(ResourceLink {
        uri: uri.into(),
        name: name.to_string(),
        title: None,
        description: Some(description.to_string()),
        mime_type: None,
        size: None,
        annotations: None,
    })
}

/// The completion to return for an argument that offers none.
pub fn no_completions() -> Completion {
    Completion { values: Vec::new(), total: None, has_more: false }
}

/// The most suggestions one completion may carry (the MCP limit).
pub const MAX_COMPLETIONS: usize = 100;

/// Completes `typed` from a fixed list of `options`: every option that starts
/// with `typed`, ignoring ASCII case, in the order given.
pub fn complete_from(options: &[&str], typed: &str) -> Completion {
    let typed = typed.to_ascii_lowercase();
    let matches: Vec<String> =
        options.iter().filter(|option| option.to_ascii_lowercase().starts_with(&typed)).map(|option| option.to_string()).collect();
    let total = matches.len();
    Completion { has_more: total > MAX_COMPLETIONS, total: Some(total as u32), values: matches.into_iter().take(MAX_COMPLETIONS).collect() }
}
