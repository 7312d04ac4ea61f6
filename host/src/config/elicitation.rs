//! `[elicitation]`: the limits on forms waiting for a client's answer
//! (read by `input`).

use std::time::Duration;

use serde::Deserialize;

use super::positive;
use crate::input::{ElicitationLimits, MAX_ELICITATION_TIMEOUT_MS};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ElicitationSection {
    pub(super) timeout_ms: Option<u64>,
    pub(super) max_pending_per_session: Option<u64>,
    pub(super) max_pending_per_tenant: Option<u64>,
    pub(super) max_pending: Option<u64>,
}

impl ElicitationSection {
    pub(super) fn apply(&self, base: ElicitationLimits) -> Result<ElicitationLimits, String> {
        // A semaphore holds at most this many permits.
        let count = |key: &str, value: Option<u64>, base: usize| -> Result<usize, String> {
            let Some(value) = value else { return Ok(base) };
            positive(key, value)?;
            let max = tokio::sync::Semaphore::MAX_PERMITS.min(1 << 20) as u64;
            if value > max {
                return Err(format!("{key} must be at most {max}"));
            }
            Ok(value as usize)
        };
        let mut limits = base;
        if let Some(ms) = self.timeout_ms {
            positive("elicitation.timeout_ms", ms)?;
            if ms > MAX_ELICITATION_TIMEOUT_MS {
                return Err(format!(
                    "elicitation.timeout_ms must be at most {MAX_ELICITATION_TIMEOUT_MS} (an hour, the life of a requestState)"
                ));
            }
            limits.timeout = Duration::from_millis(ms);
        }
        limits.per_session = count("elicitation.max_pending_per_session", self.max_pending_per_session, base.per_session)?;
        limits.per_tenant = count("elicitation.max_pending_per_tenant", self.max_pending_per_tenant, base.per_tenant)?;
        limits.in_all = count("elicitation.max_pending", self.max_pending, base.in_all)?;
        Ok(limits)
    }
}
