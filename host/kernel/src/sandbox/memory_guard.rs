//! The limiter of a call's store: linear memory, tables and instances.

use wasmtime::ResourceLimiter;

/// Caps linear memory, tables and instances, and remembers whether it refused
/// a memory growth, so that the trap that follows (a Rust guest aborts when an
/// allocation fails) can be reported as the memory limit it is.
pub(super) struct MemoryGuard {
    memory_bytes: usize,
    pub(super) denied: Option<usize>,
    /// The size the largest memory reached. A growth allowed here that the
    /// system then fails still counts; with the pool's memory reserved up
    /// front, that is rare. (Growth past a memory's own maximum fails before
    /// it gets here.)
    pub(super) largest: usize,
    /// The sizes of all its memories together.
    pub(super) total: usize,
}

impl MemoryGuard {
    pub(super) fn new(memory_bytes: usize) -> MemoryGuard {
        MemoryGuard { memory_bytes, denied: None, largest: 0, total: 0 }
    }
}

/// Table elements one table may grow to.
pub(super) const MAX_TABLE_ELEMENTS: usize = 100_000;
/// Core instances, tables and memories one component instance may create
/// (a Rust, JavaScript or Python pack uses a handful of each).
pub(super) const MAX_INSTANCES: usize = 16;
pub(super) const MAX_TABLES: usize = 4;
pub(super) const MAX_MEMORIES: usize = 4;

impl ResourceLimiter for MemoryGuard {
    fn memory_growing(&mut self, current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory_bytes {
            self.denied = Some(desired);
            return Ok(false);
        }
        // Also called when a memory is created, with `current` 0.
        self.largest = self.largest.max(desired);
        self.total += desired.saturating_sub(current);
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= MAX_TABLE_ELEMENTS)
    }

    fn instances(&self) -> usize {
        MAX_INSTANCES
    }

    fn tables(&self) -> usize {
        MAX_TABLES
    }

    fn memories(&self) -> usize {
        MAX_MEMORIES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_memory_guard_measures_the_largest_memory_against_the_limit() {
        let mut guard = MemoryGuard::new(4 << 16);
        // A memory is created, then grows; a second, smaller one is created.
        assert!(guard.memory_growing(0, 1 << 16, None).unwrap());
        assert!(guard.memory_growing(1 << 16, 3 << 16, None).unwrap());
        assert!(guard.memory_growing(0, 2 << 16, None).unwrap());
        assert_eq!((guard.largest, guard.total, guard.denied), (3 << 16, 5 << 16, None));
        // A growth past the limit is refused, and remembered.
        assert!(!guard.memory_growing(3 << 16, 5 << 16, None).unwrap());
        assert_eq!((guard.largest, guard.total, guard.denied), (3 << 16, 5 << 16, Some(5 << 16)));
    }
}
