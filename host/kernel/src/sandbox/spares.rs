//! Fresh instances made ahead of time.
//!
//! Isolation asks that every call get an instance no call has used; it does
//! not ask that the instance be built on the request path. When a call into
//! a plugin finishes, its used instance is dropped and the plugin's next
//! instance is built in a task of its own, off the path of the reply; the
//! next call takes that spare instead of building one. A spare is handed out
//! once (it is moved out of the shelf), and never after a call has used it.
//!
//! Spares are few, and never queue ahead of a call:
//! - a plugin has at most one, and the sandbox at most [`SPARES`], holding at
//!   most [`SPARE_MEMORY`] of linear memory between them: the shelf drops
//!   the spare made longest ago to make room, so only recently called
//!   plugins hold one, and a plugin never called holds none (a plugin whose
//!   instance alone is larger than [`SPARE_MEMORY_EACH`], a quarter of
//!   that, builds no more after its first, and keeps none; nor does one
//!   whose start keeps a host resource, such as a clock's pollable, whose
//!   deadline runs from its making and so could time how long a spare
//!   waited);
//! - a spare is built only when its plugin's quota and the sandbox have a
//!   free slot at once (it never queues for one); it holds them while it is
//!   built, as a call would, and gives them back, with any turn in the slow
//!   lane its start took, once it is on the shelf;
//! - it is built under the plugin's limits, and the call that takes it
//!   inherits what its instantiation used: its fuel, its memory, its
//!   output, and the time it took, so a call's budget covers its instance's
//!   start as it does when the instance is built on the path;
//! - a spare whose instantiation failed is dropped, logged at debug and
//!   counted (`CallObserver::spare_failed`): the next call builds its own
//!   instance, and reports what happens to it;
//! - a plugin that is replaced or removed takes its spare with it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use super::{CallFailure, CallQuota, CallState, Instance, Sandbox};
use crate::bindings::Linked;
use crate::grants::GrantedAccess;
use crate::grants::folders::PluginFolders;
use crate::limits::Limits;

/// The most spare instances a sandbox holds, across all its plugins.
pub const SPARES: usize = 16;

/// The most linear memory the spares of a sandbox hold between them, in
/// bytes (each counted at the size of all its memories together).
pub const SPARE_MEMORY: usize = 256 << 20;

/// The most one spare may hold: a quarter of [`SPARE_MEMORY`], so that a
/// pack whose memory limit was raised cannot push every other pack's spare
/// off the shelf with one of its own (it builds its instances on the path
/// of its calls instead).
pub const SPARE_MEMORY_EACH: usize = SPARE_MEMORY / 4;

/// How one plugin's fresh instances are made: on the path of a call when no
/// spare is ready, and ahead of its next call after each call.
pub struct PackInstances {
    sandbox: Arc<Sandbox>,
    pre: Linked<CallState>,
    limits: Limits,
    quota: CallQuota,
    plugin: String,
    /// What its calls see of the machine.
    access: Arc<PluginFolders>,
    /// This plugin's place on the sandbox's shelf.
    key: u64,
    /// Whether a task is building this plugin's spare now.
    making: AtomicBool,
    /// Whether it builds no spares: its instances are too large for the
    /// shelf to hold one, or its start keeps host resources.
    builds_no_spares: AtomicBool,
}

/// Keys of the shelf, one per [`PackInstances`] ever made.
static NEXT_KEY: AtomicU64 = AtomicU64::new(0);

impl PackInstances {
    /// The instances of the plugin `plugin`, made from `pre` in `sandbox`
    /// under `limits`, `quota` calls at a time, seeing `access`.
    pub fn new(
        sandbox: Arc<Sandbox>,
        pre: Linked<CallState>,
        limits: Limits,
        quota: CallQuota,
        plugin: String,
        access: GrantedAccess,
    ) -> Arc<PackInstances> {
        let access = sandbox.plugin_folders(access);
        let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
        Arc::new(PackInstances {
            sandbox,
            pre,
            limits,
            quota,
            plugin,
            access,
            key,
            making: AtomicBool::new(false),
            builds_no_spares: AtomicBool::new(false),
        })
    }

    /// The prepared component.
    pub fn pre(&self) -> &Linked<CallState> {
        &self.pre
    }

    /// The limits each call runs under.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// What each call sees of the machine.
    pub fn access(&self) -> &GrantedAccess {
        self.access.access()
    }

    /// A fresh instance for one call, once the plugin's quota and then the
    /// sandbox have a free slot: the spare made ahead of it if there is one,
    /// else one built now. The host copies at most `copy_budget` bytes out of
    /// it in one call.
    pub async fn fresh(&self, copy_budget: usize) -> Result<Instance, CallFailure> {
        let slots = self.sandbox.call_slots(&self.quota).await?;
        match self.sandbox.spares.take(self.key) {
            Some(spare) => {
                self.sandbox.spares_handed_out.fetch_add(1, Ordering::Relaxed);
                Ok(spare.hand_out(slots, copy_budget, &self.sandbox))
            }
            None => {
                self.sandbox
                    .new_instance(&self.limits, copy_budget, &self.quota, &self.plugin, &self.access, slots, true)
                    .instantiated(&self.pre)
                    .await
            }
        }
    }

    /// Takes a used instance off the path of the reply: drops it, and builds
    /// the plugin's next instance, in a task of their own.
    pub fn retire(self: &Arc<Self>, used: Instance) {
        let instances = self.clone();
        tokio::spawn(async move {
            let copy_budget = used.copy_budget;
            drop(used);
            instances.make_spare(copy_budget).await;
        });
    }

    /// Builds the plugin's spare, unless it has one, one is being built, a
    /// slot is not free at once, or its instances are too large to keep.
    async fn make_spare(&self, copy_budget: usize) {
        if self.builds_no_spares.load(Ordering::Relaxed) || self.sandbox.spares.holds(self.key) || self.making.swap(true, Ordering::AcqRel)
        {
            return;
        }
        // Lets the next call make one, however this one ends (a panic, or
        // the runtime dropping the task).
        let making = Making(&self.making);
        let slots = (self.quota.calls.clone().try_acquire_owned(), self.sandbox.slots.clone().try_acquire_owned());
        let (Ok(own), Ok(slot)) = slots else { return };
        let instance = self.sandbox.new_instance(&self.limits, copy_budget, &self.quota, &self.plugin, &self.access, [own, slot], false);
        match instance.instantiated(&self.pre).await {
            Ok(instance) => {
                let (spare, held) = instance.shelved();
                // A start that keeps a host resource (a clock's pollable,
                // whose deadline runs from its making) could measure how
                // long the spare waited: such a pack builds each instance
                // for its call instead.
                if !spare.store.data().table.is_empty() {
                    self.builds_no_spares.store(true, Ordering::Relaxed);
                    tracing::debug!(
                        plugin = %self.plugin.escape_debug(),
                        "no spare instances for this plugin: its start keeps host resources, which could time how long a spare waited"
                    );
                    return;
                }
                let memory = spare.store.data().guard.total;
                if memory > SPARE_MEMORY_EACH {
                    // Larger than one spare's share: this plugin builds no more.
                    self.builds_no_spares.store(true, Ordering::Relaxed);
                    return;
                }
                // The end of the call that takes this spare may build the
                // next one as soon as it is on the shelf.
                drop(making);
                let pushed_off = self.sandbox.spares.put(self.key, memory, spare);
                self.sandbox.spares_made.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(plugin = %self.plugin.escape_debug(), "spare instance made");
                // What no longer fits is dropped outside the shelf's lock,
                // and before the slots the spare held while it was built:
                // until then those slots keep a call from needing a pool
                // instance the spares still hold.
                drop(pushed_off);
                drop(held);
            }
            Err(failure) => {
                tracing::debug!(plugin = %self.plugin.escape_debug(), "no spare instance made: the plugin {failure}");
                self.sandbox.observer.spare_failed(&self.plugin);
            }
        }
    }
}

/// Clears a [`PackInstances`]' `making` flag when dropped.
struct Making<'a>(&'a AtomicBool);

impl Drop for Making<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

impl Drop for PackInstances {
    fn drop(&mut self) {
        // The plugin is gone (replaced or removed): so is its spare.
        drop(self.sandbox.spares.take(self.key));
    }
}

/// The spares of a sandbox, the one made longest ago first.
pub(super) struct SparePool<T> {
    spares: Mutex<VecDeque<Spare<T>>>,
    capacity: usize,
    memory_capacity: usize,
}

struct Spare<T> {
    key: u64,
    memory: usize,
    item: T,
}

impl<T> SparePool<T> {
    /// A shelf of at most `capacity` items of at most `memory_capacity`
    /// bytes between them.
    pub(super) fn new(capacity: usize, memory_capacity: usize) -> SparePool<T> {
        SparePool { spares: Mutex::new(VecDeque::new()), capacity, memory_capacity }
    }

    /// Takes `key`'s item off the shelf.
    pub(super) fn take(&self, key: u64) -> Option<T> {
        let mut spares = self.spares.lock().unwrap();
        let at = spares.iter().position(|spare| spare.key == key)?;
        spares.remove(at).map(|spare| spare.item)
    }

    /// Whether `key` has an item on the shelf.
    pub(super) fn holds(&self, key: u64) -> bool {
        self.spares.lock().unwrap().iter().any(|spare| spare.key == key)
    }

    /// Puts `item`, of `memory` bytes, on the shelf as `key`'s, and returns
    /// what no longer fits: the items put there longest ago, or `item`
    /// itself if `key` has one already or it alone is too large.
    pub(super) fn put(&self, key: u64, memory: usize, item: T) -> Vec<T> {
        let mut spares = self.spares.lock().unwrap();
        if memory > self.memory_capacity || spares.iter().any(|spare| spare.key == key) {
            return vec![item];
        }
        let mut evicted = Vec::new();
        while spares.len() >= self.capacity || spares.iter().map(|spare| spare.memory).sum::<usize>() + memory > self.memory_capacity {
            let Some(oldest) = spares.pop_front() else { break };
            evicted.push(oldest.item);
        }
        spares.push_back(Spare { key, memory, item });
        evicted
    }

    /// How many items are on the shelf, and their bytes.
    pub(super) fn contents(&self) -> (usize, usize) {
        let spares = self.spares.lock().unwrap();
        (spares.len(), spares.iter().map(|spare| spare.memory).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_holds_one_item_and_taking_it_leaves_none() {
        let shelf = SparePool::new(4, 100);
        assert!(shelf.put(1, 10, "first").is_empty());
        assert_eq!(shelf.put(1, 10, "second"), vec!["second"], "a key's second item is refused, not swapped in");
        assert!(shelf.holds(1));
        assert_eq!(shelf.take(1), Some("first"));
        assert_eq!(shelf.take(1), None, "an item is handed out once");
        assert!(!shelf.holds(1));
    }

    #[test]
    fn the_item_put_longest_ago_makes_room() {
        let shelf = SparePool::new(2, 100);
        assert!(shelf.put(1, 10, "one").is_empty());
        assert!(shelf.put(2, 10, "two").is_empty());
        assert_eq!(shelf.put(3, 10, "three"), vec!["one"]);
        assert_eq!(shelf.contents(), (2, 20));
        assert_eq!(shelf.take(1), None);
        assert_eq!(shelf.take(2), Some("two"));
        assert_eq!(shelf.take(3), Some("three"));
    }

    #[test]
    fn memory_is_bounded_as_well_as_the_count() {
        let shelf = SparePool::new(10, 100);
        assert!(shelf.put(1, 60, "one").is_empty());
        assert!(shelf.put(2, 30, "two").is_empty());
        assert_eq!(shelf.put(3, 50, "three"), vec!["one"], "the oldest goes until the new one fits");
        assert_eq!(shelf.contents(), (2, 80));
        assert_eq!(shelf.put(4, 101, "huge"), vec!["huge"], "an item larger than the shelf is refused");
        assert_eq!(shelf.contents(), (2, 80));
    }

    #[test]
    fn taking_a_key_leaves_the_others() {
        let shelf = SparePool::new(4, 100);
        shelf.put(1, 10, "one");
        shelf.put(2, 10, "two");
        assert_eq!(shelf.take(1), Some("one"));
        assert_eq!(shelf.contents(), (1, 10));
        assert_eq!(shelf.take(2), Some("two"));
    }
}
