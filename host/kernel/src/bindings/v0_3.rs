//! `prompt-host:prompts@0.3.x`: its bindings, and its adapter into the
//! model. 0.3 added typed arguments and what a pack wants to be granted;
//! 0.3.1 the optional `asking` interface, looked up by name
//! ([`ASKING_INTERFACE`]) rather than bound, so that a 0.3.0 pack links too
//! (its exports are found by their semver-compatible names).

use wasmtime::Store;
use wasmtime::component::{Component, ComponentExportIndex, InstancePre};

use super::{
    Call, Description, Linked, LinkedPack, PackExports, WitVersion, absent, asking_since_v0_2, calls_kept_from_v0_1, get_prompt_since_v0_2,
    kept_from_v0_1, typed_since_v0_3,
};
use crate::model;

// The generated types are documented in the WIT files under wit/0.3/;
// bindgen! cannot carry those comments into its output.
#[allow(missing_docs)]
mod generated {
    wasmtime::component::bindgen!({
        path: "../../wit/0.3",
        world: "prompt-pack",
        exports: { default: async },
    });
}

use generated::exports::prompt_host::prompts::prompt_provider as v;

/// The interface through which a 0.3.1 pack opts prompts in to have the
/// host ask for their missing arguments (any 0.3.x release of it is found).
pub const ASKING_INTERFACE: &str = "prompt-host:prompts/asking@0.3.1";

/// Its one function: the names of the prompts that opt in.
pub const PROMPTS_THAT_ASK: &str = "prompts-that-ask";

kept_from_v0_1!();
asking_since_v0_2!();

typed_since_v0_3!();

/// Links a 0.3 pack, and its `asking` export if it has one.
pub(super) fn link<T: Send + 'static>(component: &Component, instance_pre: InstancePre<T>) -> Result<Linked<T>, String> {
    let prompts_that_ask = asking_export(component)?;
    let indices = generated::PromptPackIndices::new(&instance_pre).map_err(|e| format!("{e:#}"))?;
    Ok(std::sync::Arc::new(Pre { instance_pre, indices, prompts_that_ask }))
}

/// The `prompts-that-ask` function of a 0.3.1 pack's `asking` export, if it
/// has one; refused at link time, as a wrong `prompt-provider` is, when the
/// interface is there and the function is missing or of another type.
fn asking_export(component: &Component) -> Result<Option<ComponentExportIndex>, String> {
    use wasmtime::component::types::{ComponentItem, Type};
    let Some((_, asking)) = component.get_export(None, ASKING_INTERFACE) else { return Ok(None) };
    let wrong = || format!("its export {ASKING_INTERFACE} must hold {PROMPTS_THAT_ASK}: func() -> list<string>, as WIT 0.3.1 declares it");
    let (item, function) = component.get_export(Some(&asking), PROMPTS_THAT_ASK).ok_or_else(wrong)?;
    let ComponentItem::ComponentFunc(ty) = item else { return Err(wrong()) };
    let results: Vec<Type> = ty.results().collect();
    let returns_names = matches!(results.as_slice(), [Type::List(list)] if matches!(list.ty(), Type::String));
    if ty.params().len() != 0 || !returns_names {
        return Err(wrong());
    }
    Ok(Some(function))
}

/// A 0.3 pack, linked: where `prompt-provider`'s functions are, resolved
/// once, and the `prompts-that-ask` function of its `asking` export, if it
/// has one.
struct Pre<T: 'static> {
    instance_pre: InstancePre<T>,
    indices: generated::PromptPackIndices,
    prompts_that_ask: Option<ComponentExportIndex>,
}

impl<T: Send + 'static> LinkedPack<T> for Pre<T> {
    fn version(&self) -> WitVersion {
        WitVersion::V0_3
    }

    fn instantiate<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Box<dyn PackExports<T>>> {
        Box::pin(async move {
            let instance = self.instance_pre.instantiate_async(&mut *store).await?;
            let pack = self.indices.load(&mut *store, &instance)?;
            let asking = self.prompts_that_ask.map(|function| (instance, function));
            Ok(Box::new(Pack(pack, asking)) as Box<dyn PackExports<T>>)
        })
    }
}

/// An instance of a 0.3 pack, and its `prompts-that-ask` when it exports
/// `asking`.
struct Pack(generated::PromptPack, Option<(wasmtime::component::Instance, ComponentExportIndex)>);

impl<T: Send + 'static> PackExports<T> for Pack {
    fn version(&self) -> WitVersion {
        WitVersion::V0_3
    }

    fn describe_pack<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Option<Description>> {
        Box::pin(async move {
            let info = self.0.prompt_host_prompts_prompt_provider().call_describe_pack(store).await?;
            Ok(Some(description(info)))
        })
    }

    calls_kept_from_v0_1!();

    fn exports_asking(&self) -> bool {
        self.1.is_some()
    }

    fn prompts_that_ask<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Option<Vec<String>>> {
        let Some((instance, function)) = self.1 else { return absent() };
        Box::pin(async move {
            let function = instance.get_typed_func::<(), (Vec<String>,)>(&mut *store, &function)?;
            let (names,) = function.call_async(&mut *store, ()).await?;
            Ok(Some(names))
        })
    }

    get_prompt_since_v0_2!();
}
