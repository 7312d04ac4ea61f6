//! `prompt-host:prompts@0.4.x`: its bindings, and its adapter into the
//! model. 0.4 keeps 0.3.1's `prompt-provider` and `asking`, type for type,
//! and adds the optional `content` interface: the skills' files and the
//! static resources a pack carries. `asking` and `content` are each looked
//! up by name when the pack is linked, so a pack exports either, both or
//! neither.

use wasmtime::Store;
use wasmtime::component::{Component, InstancePre};

use super::{
    Call, Description, Linked, LinkedPack, PackExports, WitVersion, absent, asking_since_v0_2, calls_kept_from_v0_1, get_prompt_since_v0_2,
    kept_from_v0_1, typed_since_v0_3,
};
use crate::model;

// The generated types are documented in the WIT files under wit/0.4/;
// bindgen! cannot carry those comments into its output.
#[allow(missing_docs)]
mod generated {
    wasmtime::component::bindgen!({
        path: "../../wit/0.4",
        world: "prompt-pack-with-content",
        exports: { default: async },
    });
}

use generated::exports::prompt_host::prompts::{asking, content, prompt_provider as v};

/// The interface through which a pack opts prompts in to have the host ask
/// for their missing arguments (any 0.4.x release of it is found).
const ASKING_INTERFACE: &str = "prompt-host:prompts/asking@0.4.0";

/// The interface through which a pack carries skills and static resources.
const CONTENT_INTERFACE: &str = "prompt-host:prompts/content@0.4.0";

kept_from_v0_1!();
asking_since_v0_2!();
typed_since_v0_3!();

fn skill_file(file: content::SkillFile) -> model::SkillFile {
    model::SkillFile { path: file.path, bytes: file.bytes }
}

fn static_resource(resource: content::StaticResource) -> model::StaticResource {
    model::StaticResource {
        uri: resource.uri,
        name: resource.name,
        title: resource.title,
        description: resource.description,
        mime_type: resource.mime_type,
        body: match resource.body {
            v::ResourceBody::Text(text) => model::ResourceBody::Text(text),
            v::ResourceBody::Blob(blob) => model::ResourceBody::Blob(blob),
        },
    }
}

/// The indices of an optional interface the component exports, found once;
/// `None` when it does not export it. An interface of the wrong shape is
/// refused here, as a wrong `prompt-provider` is.
fn optional<I>(component: &Component, name: &str, indices: impl FnOnce() -> wasmtime::Result<I>) -> Result<Option<I>, String> {
    match component.get_export_index(None, name) {
        None => Ok(None),
        Some(_) => indices().map(Some).map_err(|e| format!("its export {name} is not the one WIT 0.4 declares: {e:#}")),
    }
}

/// Links a 0.4 pack, and its `asking` and `content` exports if it has them.
pub(super) fn link<T: Send + 'static>(component: &Component, instance_pre: InstancePre<T>) -> Result<Linked<T>, String> {
    let provider = v::GuestIndices::new(&instance_pre).map_err(|e| format!("{e:#}"))?;
    let asking = optional(component, ASKING_INTERFACE, || asking::GuestIndices::new(&instance_pre))?;
    let content = optional(component, CONTENT_INTERFACE, || content::GuestIndices::new(&instance_pre))?;
    Ok(std::sync::Arc::new(Pre { instance_pre, provider, asking, content }))
}

/// A 0.4 pack, linked: where its interfaces' functions are, resolved once.
struct Pre<T: 'static> {
    instance_pre: InstancePre<T>,
    provider: v::GuestIndices,
    asking: Option<asking::GuestIndices>,
    content: Option<content::GuestIndices>,
}

impl<T: Send + 'static> LinkedPack<T> for Pre<T> {
    fn version(&self) -> WitVersion {
        WitVersion::V0_4
    }

    fn instantiate<'a>(&'a self, store: &'a mut Store<T>) -> Call<'a, Box<dyn PackExports<T>>> {
        Box::pin(async move {
            let instance = self.instance_pre.instantiate_async(&mut *store).await?;
            let provider = Provider(self.provider.load(&mut *store, &instance)?);
            let asking = self.asking.as_ref().map(|indices| indices.load(&mut *store, &instance)).transpose()?;
            let content = self.content.as_ref().map(|indices| indices.load(&mut *store, &instance)).transpose()?;
            Ok(Box::new(Pack(provider, asking, content)) as Box<dyn PackExports<T>>)
        })
    }
}

/// An instance's `prompt-provider`, under the accessor the calls shared with
/// the other versions use.
struct Provider(v::Guest);

impl Provider {
    fn prompt_host_prompts_prompt_provider(&self) -> &v::Guest {
        &self.0
    }
}

/// An instance of a 0.4 pack: its `prompt-provider`, and its `asking` and
/// `content` when it exports them.
struct Pack(Provider, Option<asking::Guest>, Option<content::Guest>);

impl<T: Send + 'static> PackExports<T> for Pack {
    fn version(&self) -> WitVersion {
        WitVersion::V0_4
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
        let Some(asking) = &self.1 else { return absent() };
        Box::pin(async move { Ok(Some(asking.call_prompts_that_ask(store).await?)) })
    }

    fn exports_content(&self) -> bool {
        self.2.is_some()
    }

    fn content<'a>(&'a self, store: &'a mut Store<T>, copy_budget: usize) -> Call<'a, Option<model::PackContent>> {
        let Some(content) = &self.2 else { return absent() };
        Box::pin(async move {
            store.set_hostcall_fuel(copy_budget);
            let skill_files = content.call_skill_files(&mut *store).await?;
            // The two calls share one budget: what the first copied is spent,
            // as wasmtime counts it (the list's elements, then their bytes).
            let elements = std::mem::size_of_val(skill_files.as_slice());
            let copied: usize = elements + skill_files.iter().map(|file| file.path.len() + file.bytes.len()).sum::<usize>();
            store.set_hostcall_fuel(copy_budget.saturating_sub(copied));
            let resources = content.call_static_resources(&mut *store).await?;
            Ok(Some(model::PackContent {
                skill_files: skill_files.into_iter().map(skill_file).collect(),
                resources: resources.into_iter().map(static_resource).collect(),
            }))
        })
    }

    get_prompt_since_v0_2!();
}
