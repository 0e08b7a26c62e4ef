//! Where a campaign's time goes: with `VKDIFF_PROFILE=1`, named spans (SPIR-V, pipeline
//! creation, job submission, the reference, ...) add up their wall time per process, and
//! [`report`] prints the totals (the worker does at exit). Each span also adds up the CPU time
//! the whole process (every thread: lavapipe's, rayon's) spent meanwhile, which a busy machine
//! does not inflate as it does wall time. Off, a span costs one relaxed load.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

static TOTALS: Mutex<BTreeMap<&'static str, (Duration, Duration, u64)>> =
    Mutex::new(BTreeMap::new());
/// The jobs that used a pipeline for the first time: (its label, wall time).
static FIRST_USES: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());
/// Backend mode's ggml graphs: (its label, wall time). ggml compiles a pipeline inside the
/// graph that first needs it, unseen by vkdiff, so the slowest graphs stand for the compiles.
static GRAPHS: Mutex<Vec<(String, Duration)>> = Mutex::new(Vec::new());
/// How many of the slowest first uses the report lists.
const SLOWEST_SHOWN: usize = 12;
/// 0: not read yet, 1: off, 2: on.
static STATE: AtomicU8 = AtomicU8::new(0);

/// Whether `VKDIFF_PROFILE` is on.
pub fn enabled() -> bool {
    match STATE.load(Ordering::Relaxed) {
        0 => {
            let on = crate::env::env().profile;
            STATE.store(if on { 2 } else { 1 }, Ordering::Relaxed);
            on
        }
        s => s == 2,
    }
}

/// Times the rest of the enclosing scope under `name` (when profiling is on); a first use (or a
/// ggml graph) also keeps its own wall time under its label.
pub struct Span(Option<(&'static str, Instant, Duration)>, Option<String>);

/// Starts a span.
pub fn span(name: &'static str) -> Span {
    Span(start(name), None)
}

/// Starts the span of a job that runs `pipelines` (shader and specialization) for the first time.
pub fn first_use(pipelines: String) -> Span {
    Span(start(FIRST_USE), Some(pipelines))
}

/// Starts the span of one ggml graph (backend mode), labelled by its op and types: ggml's
/// pipeline compiles happen inside the graphs, so the report lists the slowest ones.
pub fn graph(label: String) -> Span {
    Span(start(GRAPH), Some(label))
}

fn start(name: &'static str) -> Option<(&'static str, Instant, Duration)> {
    enabled().then(|| (name, Instant::now(), process_cpu()))
}

const FIRST_USE: &str = "job submit, first use";
const GRAPH: &str = "ggml graph (compiles, run)";

/// CPU time of every thread of this process so far.
fn process_cpu() -> Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a valid out-pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl Drop for Span {
    fn drop(&mut self) {
        if let Some((name, start, cpu)) = self.0 {
            let (wall, cpu) = (start.elapsed(), process_cpu().saturating_sub(cpu));
            let mut t = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
            let e = t.entry(name).or_default();
            e.0 += wall;
            e.1 += cpu;
            e.2 += 1;
            if let Some(label) = self.1.take() {
                let list = if name == GRAPH { &GRAPHS } else { &FIRST_USES };
                let mut f = list.lock().unwrap_or_else(|p| p.into_inner());
                f.push((label, wall));
            }
        }
    }
}

/// The totals so far, one line per span, then the slowest first uses (empty when profiling is
/// off).
pub fn report() -> String {
    let t = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
    let mut first = FIRST_USES.lock().unwrap_or_else(|p| p.into_inner()).clone();
    first.sort_by_key(|f| std::cmp::Reverse(f.1));
    let slowest = first
        .iter()
        .take(SLOWEST_SHOWN)
        .map(|(label, wall)| format!("profile first use {:>8.2}s {label}\n", wall.as_secs_f64()));
    // Per shader (a label's first word): where a cold run's compiles go, family by family.
    let mut by_shader: BTreeMap<&str, (Duration, u64)> = BTreeMap::new();
    for (label, wall) in &first {
        let e = by_shader
            .entry(label.split_whitespace().next().unwrap_or(""))
            .or_default();
        e.0 += *wall;
        e.1 += 1;
    }
    let by_shader = by_shader.into_iter().map(|(shader, (wall, n))| {
        format!(
            "profile first uses {:>8.2}s {n:>4}× {shader}\n",
            wall.as_secs_f64()
        )
    });
    let mut graphs = GRAPHS.lock().unwrap_or_else(|p| p.into_inner()).clone();
    graphs.sort_by_key(|f| std::cmp::Reverse(f.1));
    let slowest_graphs = graphs
        .iter()
        .take(SLOWEST_SHOWN)
        .map(|(label, wall)| format!("profile ggml graph {:>8.2}s {label}\n", wall.as_secs_f64()));
    t.iter()
        .map(|(name, (wall, cpu, n))| {
            format!(
                "profile {name:<28} wall {:>8.2}s cpu {:>8.2}s {n:>7}× cpu {:>8.3}ms each\n",
                wall.as_secs_f64(),
                cpu.as_secs_f64(),
                cpu.as_secs_f64() * 1e3 / (*n).max(1) as f64
            )
        })
        .chain(slowest)
        .chain(by_shader)
        .chain(slowest_graphs)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(name: &str) -> u64 {
        TOTALS.lock().unwrap().get(name).map_or(0, |e| e.2)
    }

    #[test]
    fn a_first_use_is_one_span_with_its_label() {
        STATE.store(2, Ordering::Relaxed);
        let before = count(FIRST_USE);
        drop(first_use("shader [1, 2]".into()));
        assert_eq!(count(FIRST_USE), before + 1);
        let r = report();
        assert!(r.contains("s shader [1, 2]\n"), "{r}");
        assert!(r.contains("× shader\n"), "{r}");
    }
}
