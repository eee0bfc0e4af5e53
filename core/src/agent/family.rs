//! What a run and its sub-agents share: the money their model calls spent and the
//! iterations they took, so `--max-cost` and the iteration cap hold for the whole family.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

/// The spending and iterations of a run and every sub-agent under it.
#[derive(Debug, Default)]
pub(crate) struct Family {
    money: Mutex<Money>,
    iterations: AtomicU32,
}

/// US dollars, over the priced calls.
#[derive(Debug, Default, Clone, Copy)]
struct Money {
    spent: f64,
    /// The worst cases of calls under way: members calling at once cannot together pass
    /// the limit, each having checked it alone.
    reserved: f64,
}

impl Family {
    fn money(&self) -> std::sync::MutexGuard<'_, Money> {
        self.money.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the family's calls have cost so far, and the worst cases of those under way.
    pub(crate) fn spent(&self) -> f64 {
        let money = self.money();
        money.spent + money.reserved
    }

    /// Sets `worst` aside for a call about to be made, unless it would take the family past
    /// `limit`; then returns what is spent and set aside already.
    pub(crate) fn reserve(&self, worst: f64, limit: f64) -> Result<(), f64> {
        let mut money = self.money();
        let committed = money.spent + money.reserved;
        if committed + worst > limit {
            return Err(committed);
        }
        money.reserved += worst;
        Ok(())
    }

    /// A call is over: what was set aside for it is released and what it cost is spent.
    pub(crate) fn settle(&self, reserved: f64, cost: f64) {
        let mut money = self.money();
        money.reserved = (money.reserved - reserved).max(0.0);
        money.spent += cost;
    }

    /// Counts one more iteration; returns how many the family has taken with it.
    pub(crate) fn take_iteration(&self) -> u32 {
        self.iterations.fetch_add(1, Ordering::Relaxed) + 1
    }
}
