//! Virtual time and cooperative action tasks. The agent's actions are blocking functions that wait
//! through `Clock::sleep_ms`; each runs on its own thread, but only one thread (the simulator's
//! main loop or one task) runs at any moment, and only the main loop decides who runs next. A
//! sleeping task resumes when the main loop reaches its wake-up time; a task that is killed unwinds
//! out of its sleep, as an agent process killed by a signal stops where it was.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use highlander_agent::Outcome;
use highlander_agent::clock::Clock;

/// A task's id, unique within one run.
pub type TaskId = u64;

/// Where a task stands when the main loop holds the turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskState {
    /// Spawned, not yet run.
    Ready,
    /// Waiting in `sleep_ms` until this virtual time.
    Sleeping { until_ms: u64 },
    /// Returned.
    Done(Outcome),
    /// Killed (unwound out of a sleep, or never started).
    Killed,
    /// The action panicked: a bug in the agent, reported as a violation.
    Panicked(String),
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Turn {
    Main,
    Task(TaskId),
}

struct Cell {
    cv: Arc<Condvar>,
    state: TaskState,
    kill: bool,
}

struct St {
    now_ms: u64,
    turn: Turn,
    cells: BTreeMap<TaskId, Cell>,
    /// Sleeps called from the main loop: the simulator's own code must never wait.
    main_sleeps: u64,
}

struct Shared {
    st: Mutex<St>,
    main_cv: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, St> {
        self.st.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The payload a killed task unwinds with.
struct Killed;

thread_local! {
    static CURRENT_TASK: std::cell::Cell<Option<TaskId>> = const { std::cell::Cell::new(None) };
}

/// The virtual clock every node's hypervisor and every action sees.
#[derive(Clone)]
pub struct SimClock {
    shared: Arc<Shared>,
}

impl Clock for SimClock {
    fn now_ms(&self) -> u64 {
        self.shared.lock().now_ms
    }

    fn sleep_ms(&self, ms: u64) {
        let Some(id) = CURRENT_TASK.with(|c| c.get()) else {
            self.shared.lock().main_sleeps += 1;
            return;
        };
        let mut st = self.shared.lock();
        let until_ms = st.now_ms.saturating_add(ms);
        let Some(cell) = st.cells.get_mut(&id) else {
            return;
        };
        cell.state = TaskState::Sleeping { until_ms };
        let cv = cell.cv.clone();
        st.turn = Turn::Main;
        self.shared.main_cv.notify_one();
        while st.turn != Turn::Task(id) {
            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        let kill = st.cells.get(&id).is_some_and(|c| c.kill);
        drop(st);
        if kill {
            std::panic::resume_unwind(Box::new(Killed));
        }
    }
}

/// The scheduler: owns virtual time and the task threads.
pub struct Kernel {
    shared: Arc<Shared>,
    handles: BTreeMap<TaskId, JoinHandle<()>>,
    next_id: TaskId,
}

impl Default for Kernel {
    fn default() -> Self {
        Self {
            shared: Arc::new(Shared {
                st: Mutex::new(St {
                    now_ms: 0,
                    turn: Turn::Main,
                    cells: BTreeMap::new(),
                    main_sleeps: 0,
                }),
                main_cv: Condvar::new(),
            }),
            handles: BTreeMap::new(),
            next_id: 1,
        }
    }
}

impl Kernel {
    pub fn clock(&self) -> SimClock {
        SimClock {
            shared: self.shared.clone(),
        }
    }

    pub fn now_ms(&self) -> u64 {
        self.shared.lock().now_ms
    }

    /// Moves virtual time forward (never back).
    pub fn advance_to(&self, t_ms: u64) {
        let mut st = self.shared.lock();
        debug_assert!(t_ms >= st.now_ms, "time goes forward only");
        st.now_ms = st.now_ms.max(t_ms);
    }

    /// How often the simulator's own code called `sleep_ms` (must stay 0).
    pub fn main_sleeps(&self) -> u64 {
        self.shared.lock().main_sleeps
    }

    /// Creates a task; it runs only when [`Kernel::resume`] gives it the turn.
    pub fn spawn(&mut self, f: impl FnOnce() -> Outcome + Send + 'static) -> TaskId {
        let id = self.next_id;
        self.next_id += 1;
        let cv = Arc::new(Condvar::new());
        self.shared.lock().cells.insert(
            id,
            Cell {
                cv: cv.clone(),
                state: TaskState::Ready,
                kill: false,
            },
        );
        let shared = self.shared.clone();
        let handle = std::thread::Builder::new()
            .name(format!("sim-task-{id}"))
            .stack_size(256 * 1024)
            .spawn(move || task_main(shared, id, cv, f));
        match handle {
            Ok(h) => {
                self.handles.insert(id, h);
            }
            Err(e) => {
                if let Some(c) = self.shared.lock().cells.get_mut(&id) {
                    c.state = TaskState::Panicked(format!("cannot spawn a thread: {e}"));
                }
            }
        }
        id
    }

    /// Gives the turn to a task until it sleeps or ends; returns its new state. Finished tasks are
    /// joined and forgotten.
    pub fn resume(&mut self, id: TaskId) -> TaskState {
        let state = {
            let mut st = self.shared.lock();
            let Some(cell) = st.cells.get(&id) else {
                return TaskState::Killed;
            };
            if !matches!(cell.state, TaskState::Ready | TaskState::Sleeping { .. }) {
                cell.state.clone()
            } else {
                let cv = cell.cv.clone();
                st.turn = Turn::Task(id);
                cv.notify_one();
                while st.turn != Turn::Main {
                    st = self
                        .shared
                        .main_cv
                        .wait(st)
                        .unwrap_or_else(|p| p.into_inner());
                }
                st.cells
                    .get(&id)
                    .map(|c| c.state.clone())
                    .unwrap_or(TaskState::Killed)
            }
        };
        if !matches!(state, TaskState::Ready | TaskState::Sleeping { .. }) {
            self.shared.lock().cells.remove(&id);
            if let Some(h) = self.handles.remove(&id) {
                let _ = h.join();
            }
        }
        state
    }

    /// Kills a task where it waits (the agent process gets SIGKILL).
    pub fn kill(&mut self, id: TaskId) -> TaskState {
        if let Some(c) = self.shared.lock().cells.get_mut(&id) {
            c.kill = true;
        }
        self.resume(id)
    }

    /// Kills every task left (end of a run).
    pub fn kill_all(&mut self) {
        let ids: Vec<TaskId> = self.handles.keys().copied().collect();
        for id in ids {
            self.kill(id);
        }
    }

    /// Tasks not yet finished.
    pub fn live_tasks(&self) -> usize {
        self.handles.len()
    }
}

impl Drop for Kernel {
    fn drop(&mut self) {
        self.kill_all();
    }
}

fn task_main(
    shared: Arc<Shared>,
    id: TaskId,
    cv: Arc<Condvar>,
    f: impl FnOnce() -> Outcome + Send + 'static,
) {
    CURRENT_TASK.with(|c| c.set(Some(id)));
    let kill = {
        let mut st = shared.lock();
        while st.turn != Turn::Task(id) {
            st = cv.wait(st).unwrap_or_else(|p| p.into_inner());
        }
        st.cells.get(&id).is_some_and(|c| c.kill)
    };
    let state = if kill {
        TaskState::Killed
    } else {
        match std::panic::catch_unwind(AssertUnwindSafe(f)) {
            Ok(outcome) => TaskState::Done(outcome),
            Err(payload) if payload.is::<Killed>() => TaskState::Killed,
            Err(payload) => TaskState::Panicked(
                payload
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_else(|| "panic".into()),
            ),
        }
    };
    let mut st = shared.lock();
    if let Some(c) = st.cells.get_mut(&id) {
        c.state = state;
    }
    st.turn = Turn::Main;
    shared.main_cv.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;
    use ocf_metadata::OcfExitCode;

    #[test]
    fn tasks_sleep_in_virtual_time_and_can_be_killed() {
        let mut k = Kernel::default();
        let clock = k.clock();
        let c1 = clock.clone();
        let a = k.spawn(move || {
            c1.sleep_ms(100);
            c1.sleep_ms(50);
            Outcome::success()
        });
        let c2 = clock.clone();
        let b = k.spawn(move || {
            c2.sleep_ms(1_000);
            Outcome::success()
        });
        assert_eq!(k.resume(a), TaskState::Sleeping { until_ms: 100 });
        assert_eq!(k.resume(b), TaskState::Sleeping { until_ms: 1_000 });
        k.advance_to(100);
        assert_eq!(k.resume(a), TaskState::Sleeping { until_ms: 150 });
        k.advance_to(150);
        assert_eq!(
            k.resume(a),
            TaskState::Done(Outcome::code_only(OcfExitCode::Success))
        );
        assert_eq!(k.kill(b), TaskState::Killed);
        assert_eq!(k.live_tasks(), 0);
        clock.sleep_ms(5);
        assert_eq!(
            k.main_sleeps(),
            1,
            "a sleep on the main loop is counted, not waited"
        );
    }
}
