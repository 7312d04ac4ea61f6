//! The example packs built into the binary, served when no plugin directory is
//! given, so a new user sees the server work at once.

use crate::loader::PluginSource;

/// The bundled packs: name and bytes.
pub const BUNDLED_PACKS: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/bundled_packs.rs"));

/// The bundled packs, as plugin sources.
pub fn sources() -> Vec<PluginSource> {
    BUNDLED_PACKS
        .iter()
        .map(|(id, bytes)| PluginSource { id: id.to_string(), origin: format!("bundled pack '{id}'"), bytes: bytes.to_vec(), bundle: None })
        .collect()
}
