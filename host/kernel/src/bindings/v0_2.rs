//! `prompt-host:prompts@0.2.x`: its bindings, and its adapter into the
//! model. 0.2 added `describe-pack` and the input-required conversation.

use wasmtime::Store;
use wasmtime::component::InstancePre;

use super::{
    Call, Description, Linked, LinkedPack, PackExports, WitVersion, absent, asking_since_v0_2, calls_kept_from_v0_1, get_prompt_since_v0_2,
    kept_from_v0_1, linked_by_bindgen,
};
use crate::model;

// The generated types are documented in the WIT files under wit/0.2/;
// bindgen! cannot carry those comments into its output.
#[allow(missing_docs)]
mod generated {
    wasmtime::component::bindgen!({
        path: "../../wit/0.2",
        world: "prompt-pack",
        exports: { default: async },
    });
}

use generated::exports::prompt_host::prompts::prompt_provider as v;

kept_from_v0_1!();
asking_since_v0_2!();

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

fn info(info: v::PackInfo) -> model::PackInfo {
    let v::PackInfo { name, version, description, authors, license, homepage, repository } = info;
    model::PackInfo { name, version, description, authors, license, homepage, repository }
}

linked_by_bindgen!(V0_2);

impl<T: Send + 'static> PackExports<T> for Pack {
    fn version(&self) -> WitVersion {
        WitVersion::V0_2
    }

    fn describe_pack<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Option<Description>> {
        Box::pin(async move {
            let described = self.0.prompt_host_prompts_prompt_provider().call_describe_pack(store).await?;
            Ok(Some(Description { info: info(described), wants: None }))
        })
    }

    calls_kept_from_v0_1!();

    fn prompts_that_ask<'a>(&'a self, _store: &'a mut Store<T>) -> Call<'a, Option<Vec<String>>> {
        absent()
    }

    get_prompt_since_v0_2!();
}
