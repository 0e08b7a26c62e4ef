//! Keeps the device's SM clock up while a bench runs, and out of the way of timed jobs.
//!
//! The H100's clock governor follows load: idle it sits at 345 MHz, and over a bench, whose
//! host time (inputs, the reference, checks) leaves the GPU mostly idle, it wanders between 345
//! and 1,980 MHz. Mat-vec times follow it (q4_0 14336×4096: 24 µs at 1,980 MHz, 56 µs at 765,
//! 78 µs at 585; `nvidia-smi` every 50 ms beside the jobs, 2026-11-26). Heating
//! inside a job's own command buffer for 30 ms did not pin it. So a thread on a second logical
//! device keeps the ALUs busy (`bench_fma.comp`, a few ms a submit) for as long as the bench
//! runs, and pauses, its last submit finished, for exactly the span of each timed job.

use std::sync::{Arc, Condvar, Mutex};

use crate::context::{BenchMode, Gpu, Pipeline};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Run,
    PauseAsked,
    Paused,
    Quit,
}

struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn set(&self, s: State) {
        *self.state.lock().unwrap() = s;
        self.changed.notify_all();
    }
}

/// The heater thread; paused by [`Heater::pause`] while a timed job runs, stopped on drop.
pub struct Heater {
    shared: Arc<Shared>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// Dispatches of `bench_fma.comp` per heater submit (the pause waits for at most one submit).
const DISPATCHES_PER_SUBMIT: u32 = 4;

impl Heater {
    /// Starts heating on `gpu` (a second logical device on the bench's physical device) with
    /// `pipeline` (`bench_fma.comp` on it: one output binding, push constant `iterations`, 256
    /// invocations a workgroup) over `groups` workgroups a dispatch.
    pub fn start(mut gpu: Gpu, pipeline: Pipeline, groups: u32, iterations: u32) -> Heater {
        let shared = Arc::new(Shared {
            state: Mutex::new(State::Run),
            changed: Condvar::new(),
        });
        let s = shared.clone();
        let thread = std::thread::spawn(move || {
            gpu.set_bench(Some(BenchMode {
                warmup: DISPATCHES_PER_SUBMIT - 1,
                repeats: 1,
                rotations: 1,
            }));
            loop {
                {
                    let mut state = s.state.lock().unwrap();
                    loop {
                        match *state {
                            State::Run => break,
                            State::PauseAsked => {
                                *state = State::Paused;
                                s.changed.notify_all();
                            }
                            State::Paused => state = s.changed.wait(state).unwrap(),
                            State::Quit => return,
                        }
                    }
                }
                let ran = (|| {
                    let mut job = gpu.job();
                    let out = job.output(groups as usize * 256 * 4);
                    job.dispatch(pipeline, &[out], &[iterations], [groups, 1, 1])?;
                    job.submit()
                })();
                if let Err(e) = ran {
                    eprintln!("heater: stopped: {e}");
                    s.set(State::Quit);
                    return;
                }
            }
        });
        Heater {
            shared,
            thread: Some(thread),
        }
    }

    /// Pauses the heater until the guard is dropped; returns once its last submit is done.
    pub fn pause(self: &Arc<Self>) -> PauseGuard {
        let mut state = self.shared.state.lock().unwrap();
        if *state == State::Run {
            *state = State::PauseAsked;
            self.shared.changed.notify_all();
        }
        while *state == State::PauseAsked {
            state = self.shared.changed.wait(state).unwrap();
        }
        PauseGuard(self.clone())
    }
}

impl crate::context::Pausable for Heater {
    fn pause(self: Arc<Self>) -> Box<dyn Send> {
        Box::new(Heater::pause(&self))
    }
}

/// Resumes the heater when dropped (see [`Heater::pause`]).
pub struct PauseGuard(Arc<Heater>);

impl Drop for PauseGuard {
    fn drop(&mut self) {
        let mut state = self.0.shared.state.lock().unwrap();
        if *state == State::Paused {
            *state = State::Run;
            self.0.shared.changed.notify_all();
        }
    }
}

impl Drop for Heater {
    fn drop(&mut self) {
        self.shared.set(State::Quit);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
