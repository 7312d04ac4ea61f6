//! `prompt-host:prompts@0.1.x`: its bindings, and its adapter into the
//! model. A 0.1 pack lists prompts, answers `get-prompt` with a reply and
//! completes arguments; it says nothing of itself and never asks.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::{
    Call, Description, Linked, LinkedPack, PackExports, WitVersion, absent, calls_kept_from_v0_1, kept_from_v0_1, linked_by_bindgen,
};
use crate::model;

// The generated types are documented in the WIT files under wit/; bindgen!
// cannot carry those comments into its output.
#[allow(missing_docs)]
mod generated {
    wasmtime::component::bindgen!({
        path: "../../wit",
        world: "prompt-pack",
        exports: { default: async },
    });
}

use generated::exports::prompt_host::prompts::prompt_provider as v;

kept_from_v0_1!();

fn prompt_argument(argument: v::PromptArgument) -> model::PromptArgument {
    model::PromptArgument {
        name: argument.name,
        title: argument.title,
        description: argument.description,
        required: argument.required,
        kind: None,
        default: None,
        examples: Vec::new(),
    }
}

linked_by_bindgen!(V0_1);

impl<T: Send + 'static> PackExports<T> for Pack {
    fn version(&self) -> WitVersion {
        WitVersion::V0_1
    }

    fn describe_pack<'a>(&'a self, _store: &'a mut Store<T>) -> Call<'a, Option<Description>> {
        absent()
    }

    calls_kept_from_v0_1!();

    fn prompts_that_ask<'a>(&'a self, _store: &'a mut Store<T>) -> Call<'a, Option<Vec<String>>> {
        absent()
    }

    fn get_prompt<'a>(
        &'a self,
        store: &'a mut Store<T>,
        name: &'a str,
        arguments: &'a [model::Argument],
        _input: Option<&'a model::Input>,
    ) -> Call<'a, Result<model::PromptAnswer, model::PromptError>> {
        Box::pin(async move {
            let arguments = self::arguments(arguments);
            let answer = self.0.prompt_host_prompts_prompt_provider().call_get_prompt(store, name, &arguments).await?;
            Ok(answer.map(|reply| model::PromptAnswer::Reply(self::reply(reply))).map_err(error))
        })
    }
}
