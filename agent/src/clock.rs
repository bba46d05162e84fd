//! Time for the agent: a [`Clock`] trait (monotonic milliseconds, sleep), the system clock, a manual
//! clock for tests, and [`Deadline`], the budget every hypervisor call is bounded by.

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Monotonic time in milliseconds since an arbitrary origin, and a way to wait.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> u64;
    fn sleep_ms(&self, ms: u64);
}

/// The real, monotonic clock (`Instant`), origin at creation.
#[derive(Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for SystemClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.origin.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
    fn sleep_ms(&self, ms: u64) {
        std::thread::sleep(Duration::from_millis(ms));
    }
}

/// A clock that only moves when slept on or advanced: tests run deadline logic instantly.
#[derive(Debug, Default)]
pub struct ManualClock {
    now_ms: Mutex<u64>,
}

impl ManualClock {
    pub fn new(start_ms: u64) -> Self {
        Self {
            now_ms: Mutex::new(start_ms),
        }
    }
    pub fn advance_ms(&self, ms: u64) {
        let mut now = self.now_ms.lock().unwrap_or_else(|p| p.into_inner());
        *now = now.saturating_add(ms);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        *self.now_ms.lock().unwrap_or_else(|p| p.into_inner())
    }
    fn sleep_ms(&self, ms: u64) {
        self.advance_ms(ms);
    }
}

/// An absolute point on a [`Clock`] by which an action must have answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Deadline {
    pub at_ms: u64,
}

impl Deadline {
    /// `budget_ms` from now.
    pub fn after(clock: &dyn Clock, budget_ms: u64) -> Self {
        Self {
            at_ms: clock.now_ms().saturating_add(budget_ms),
        }
    }
    /// Milliseconds left (0 once passed).
    pub fn remaining_ms(self, clock: &dyn Clock) -> u64 {
        self.at_ms.saturating_sub(clock.now_ms())
    }
    pub fn passed(self, clock: &dyn Clock) -> bool {
        self.remaining_ms(clock) == 0
    }
    /// A deadline `reserve_ms` earlier (for a phase that must leave time for the next one).
    pub fn minus(self, reserve_ms: u64) -> Self {
        Self {
            at_ms: self.at_ms.saturating_sub(reserve_ms),
        }
    }
    /// Sleeps `ms`, or less so as not to pass the deadline; false if no time was left.
    pub fn sleep_within(self, clock: &dyn Clock, ms: u64) -> bool {
        let left = self.remaining_ms(clock);
        if left == 0 {
            return false;
        }
        clock.sleep_ms(ms.min(left));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_told() {
        let c = ManualClock::new(100);
        assert_eq!(c.now_ms(), 100);
        c.sleep_ms(50);
        assert_eq!(c.now_ms(), 150);
        let d = Deadline::after(&c, 1000);
        assert_eq!(d.remaining_ms(&c), 1000);
        assert!(d.sleep_within(&c, 5000), "sleeps what is left");
        assert_eq!(c.now_ms(), 1150);
        assert!(d.passed(&c));
        assert!(!d.sleep_within(&c, 10));
        assert_eq!(d.minus(400).at_ms, 750);
    }

    #[test]
    fn system_clock_is_monotonic() {
        let c = SystemClock::new();
        let a = c.now_ms();
        c.sleep_ms(2);
        assert!(c.now_ms() >= a + 2);
    }
}
