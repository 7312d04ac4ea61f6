//! `[sandbox]`: the settings every plugin shares (read by the kernel's
//! `sandbox`).

use std::time::Duration;

use serde::Deserialize;

use super::positive;
use prompt_host_kernel::limits::MAX_CONCURRENT_CALLS;
use prompt_host_kernel::sandbox::{MAX_WASM_STACK, SandboxConfig};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SandboxSection {
    pub(super) max_wasm_stack_kib: Option<u64>,
    pub(super) max_concurrent_calls: Option<u64>,
    pub(super) queue_wait_ms: Option<u64>,
}

impl SandboxSection {
    pub(super) fn apply(&self, base: &SandboxConfig) -> Result<SandboxConfig, String> {
        if let Some(kib) = self.max_wasm_stack_kib {
            positive("sandbox.max_wasm_stack_kib", kib)?;
            // The engine refuses a larger stack only when it starts, and
            // then as if the instance pool were at fault.
            let max = (MAX_WASM_STACK >> 10) as u64;
            if kib > max {
                return Err(format!(
                    "sandbox.max_wasm_stack_kib must be at most {max}: calls run on the engine's {} KiB stacks, and \
                     the host's own functions need the rest",
                    prompt_host_kernel::sandbox::CALL_STACK >> 10
                ));
            }
        }
        if let Some(calls) = self.max_concurrent_calls {
            positive("sandbox.max_concurrent_calls", calls)?;
            if calls > MAX_CONCURRENT_CALLS {
                return Err(format!("sandbox.max_concurrent_calls must be at most {MAX_CONCURRENT_CALLS}"));
            }
        }
        Ok(SandboxConfig {
            max_wasm_stack: self.max_wasm_stack_kib.map_or(base.max_wasm_stack, |kib| (kib as usize) << 10),
            max_concurrent_calls: self.max_concurrent_calls.map_or(base.max_concurrent_calls, |calls| calls as usize),
            queue_wait: self.queue_wait_ms.map_or(base.queue_wait, Duration::from_millis),
            max_memory_bytes: base.max_memory_bytes,
            sandboxes: base.sandboxes,
        })
    }
}
