//! Where cases are evaluated. Campaigns from the CLI evaluate in a worker process
//! (`vkdiff worker`), so a driver that crashes or hangs inside a case takes down only the worker:
//! the crash becomes that case's outcome (with a reproducer) and a fresh worker carries on. Tests
//! and fuzz targets evaluate in process.
//!
//! Protocol over the worker's stdin/stdout: frames of a little-endian u32 length and a bincode
//! payload. The parent sends [`Request`]s; the worker answers each with one [`Response`], after
//! a first `Response::Ready` naming the device.

use std::collections::VecDeque;
use std::io::{BufRead, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use vkdiff_gpu::{DeviceCaps, Gpu, ShaderTree};

use crate::model::cases::{Case, CrashKind, Outcome};
use crate::model::driver::{Ctx, Driver};

/// Something that turns a case into an outcome.
pub trait Evaluator {
    /// Runs and judges `case`.
    fn evaluate(&mut self, case: &Case) -> Outcome;
    /// The device's capabilities (its name for reports, features for skips).
    fn caps(&self) -> &DeviceCaps;
    /// The shader tree, for reports and reproducers.
    fn shaders(&self) -> String;
    /// Whether a real ggml graph on the device produces the case's configuration and inputs (an
    /// evaluator that only runs real graphs judges the inputs alone:
    /// [`crate::model::facts::input_reach`]).
    fn reach(&self, case: &Case) -> crate::model::facts::Reach {
        crate::model::facts::reach_of(case, self.caps())
    }
    /// Backend mode: the ggml tree and configuration cases run through (None: vkdiff's runners).
    fn ggml(&self) -> Option<crate::exec::ggml::GgmlTarget> {
        None
    }
    /// Why this evaluator does not run `variant` at all (backend mode: a path its
    /// configuration does not take), or None.
    fn variant_skip(&self, _variant: &crate::model::kernels::Variant) -> Option<String> {
        None
    }
    /// Backend mode: what the last evaluated case dispatched, as vkdiff's layer recorded it
    /// (None: not recorded).
    fn take_dispatched(&mut self) -> Option<crate::exec::ggml::Dispatched> {
        None
    }
}

/// Evaluation on a device owned by the caller.
pub struct InProcess<'a> {
    /// The device.
    pub gpu: &'a mut Gpu,
    /// The shaders.
    pub tree: &'a mut ShaderTree,
    /// Which cases run their kernel twice and require bitwise-identical outputs.
    pub repeat: Repeat,
}

/// Which cases an in-process evaluator gives the race repeat (a second run of the kernel whose
/// output must be bitwise identical to the first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repeat {
    /// No case.
    Never,
    /// Every case (replay, mutants, single-case checks).
    Always,
    /// A campaign's share on this device: see [`campaign_repeats`] (every case on a GPU, one
    /// in [`CPU_REPEAT_EVERY`] on lavapipe). The differential suite uses it, as the main job.
    AsCampaign,
}

impl From<bool> for Repeat {
    fn from(repeat: bool) -> Self {
        if repeat {
            Repeat::Always
        } else {
            Repeat::Never
        }
    }
}

impl Evaluator for InProcess<'_> {
    fn evaluate(&mut self, case: &Case) -> Outcome {
        let repeat = match self.repeat {
            Repeat::Never => false,
            Repeat::Always => true,
            Repeat::AsCampaign => {
                let json = serde_json::to_string(case).expect("cases serialize");
                campaign_repeats(true, None, self.gpu.caps(), &json)
            }
        };
        crate::exec::own::evaluate(case, self.gpu, self.tree, repeat)
    }

    fn caps(&self) -> &DeviceCaps {
        self.gpu.caps()
    }

    fn shaders(&self) -> String {
        self.tree.dir().display().to_string()
    }
}

/// A request to the worker.
#[derive(Debug, Serialize, Deserialize)]
pub enum Request {
    /// Evaluate this case (JSON, since cases use internally tagged enums).
    Evaluate(String),
}

/// A worker's answer.
#[derive(Debug, Serialize, Deserialize)]
pub enum Response {
    /// Sent once at start: the device is open.
    Ready {
        /// The device's capabilities.
        caps: DeviceCaps,
    },
    /// The device could not be opened.
    Failed(String),
    /// The outcome of the last request.
    Outcome(Outcome),
    /// Backend mode, sent just before the outcome: what the case dispatched.
    Dispatched(crate::exec::ggml::Dispatched),
}

pub(crate) fn write_frame(w: &mut impl Write, value: &impl Serialize) -> std::io::Result<()> {
    let bytes = bincode::serialize(value).map_err(std::io::Error::other)?;
    w.write_all(&(bytes.len() as u32).to_le_bytes())?;
    w.write_all(&bytes)?;
    w.flush()
}

pub(crate) fn read_frame<T: for<'de> Deserialize<'de>>(r: &mut impl Read) -> std::io::Result<T> {
    let mut len = [0u8; 4];
    r.read_exact(&mut len)?;
    let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
    r.read_exact(&mut bytes)?;
    bincode::deserialize(&bytes).map_err(std::io::Error::other)
}

/// On a CPU device a campaign's worker gives the race repeat to one case in this many, unless
/// `--repeat-every` says otherwise.
pub const CPU_REPEAT_EVERY: u64 = 4;

/// Whether a campaign worker runs `case_json`'s kernel twice (with `repeat` on): one case in
/// `every`, chosen by a hash of the case so the same case is always treated alike (in shrinking
/// too); by default every case on a GPU and one in [`CPU_REPEAT_EVERY`] on a CPU device
/// (lavapipe). llvmpipe runs a workgroup's invocations in one fixed order, so there a repeat can
/// only catch races between workgroups, and it was a quarter of the main job's time
/// (measured on 2026-11-26). Replay, `--in-process` and the tests other than the
/// differential suite ([`Repeat::AsCampaign`]) repeat every case.
pub fn campaign_repeats(
    repeat: bool,
    every: Option<u64>,
    caps: &DeviceCaps,
    case_json: &str,
) -> bool {
    // FNV-1a: stable across builds and platforms, unlike the std hashers' promise.
    let hash = case_json.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    });
    repeat && hash % repeat_every(every, caps).max(1) == 0
}

/// `every`, or the default for `caps` (see [`campaign_repeats`]).
pub fn repeat_every(every: Option<u64>, caps: &DeviceCaps) -> u64 {
    every.unwrap_or(if caps.kind == "cpu" {
        CPU_REPEAT_EVERY
    } else {
        1
    })
}

/// Cases per variant when `--cases` (and `--time`) are not given: [`GPU_CASES`] on a GPU,
/// [`CPU_CASES`] on a CPU device.
pub const GPU_CASES: u32 = 200;

/// The default on a CPU device (lavapipe): the main job's cases are as cheap as we could make
/// them, and on a 2-core machine its 200 cases a variant took 625 s from empty caches
/// (measured on 2026-12-05), of which about 290 s per worker are compiles that do not shrink
/// with fewer cases (shaderc, LLVM's JIT of each pipeline); at 160 it ends within 10 minutes
/// there. `--cases 200` runs the GPU's count.
pub const CPU_CASES: u32 = 160;

/// `cases`, or the default for `caps` (see [`CPU_CASES`]).
pub fn cases_per_variant(cases: Option<u32>, caps: &DeviceCaps) -> u32 {
    cases.unwrap_or(if caps.kind == "cpu" {
        CPU_CASES
    } else {
        GPU_CASES
    })
}

/// What a worker process runs its cases on: vkdiff's runners over a shader tree, or one ggml
/// build under one path configuration.
pub enum WorkerTarget {
    /// vkdiff's own runners over this shader tree.
    Shaders(PathBuf),
    /// ggml's backend built into this library folder, under this configuration (by name).
    Ggml {
        /// The folder holding libggml-vulkan.
        lib_dir: PathBuf,
        /// The configuration's name.
        config: String,
    },
}

/// A driver as a worker process holds it across cases (one value per process: the variants'
/// sizes do not matter).
#[allow(clippy::large_enum_variant)]
enum Served {
    /// vkdiff's runners: the device is reopened when a case needs other optional extensions.
    Own {
        device: Option<String>,
        gpu: Option<Gpu>,
        tree: ShaderTree,
    },
    /// ggml's backend on ggml's own device. vkdiff's device, opened first to learn the
    /// capabilities, stays open for the worker's life, as the ggml worker always kept it
    /// (closing it beside ggml's is untried on lavapipe, whose driver state already breaks
    /// after some ggml cases).
    Ggml {
        _gpu: Gpu,
        driver: crate::exec::ggml::GgmlDriver,
    },
}

impl WorkerTarget {
    /// The worker process's side of [`Setup::env`]: a ggml worker when the parent named a ggml
    /// library, else vkdiff's runners over `shaders`.
    pub fn from_env(shaders: PathBuf) -> WorkerTarget {
        let env = vkdiff_gpu::env::env();
        match &env.ggml_lib {
            Some(lib) => WorkerTarget::Ggml {
                lib_dir: lib.into(),
                config: env.ggml_config.clone(),
            },
            None => WorkerTarget::Shaders(shaders),
        }
    }
}

impl Served {
    fn open(device: Option<&str>, target: WorkerTarget) -> Result<(Served, DeviceCaps), String> {
        match target {
            WorkerTarget::Shaders(dir) => {
                // Opened first with every extension, to learn the device; each case then runs
                // on a device with only the optional extensions its kernel uses.
                let gpu = Gpu::open(device).map_err(|e| e.to_string())?;
                let caps = gpu.caps().clone();
                let served = Served::Own {
                    device: device.map(str::to_string),
                    gpu: Some(gpu),
                    tree: ShaderTree::new(dir),
                };
                Ok((served, caps))
            }
            WorkerTarget::Ggml { lib_dir, config } => {
                let config = crate::exec::ggml::Config::parse(&config)?;
                let (gpu, driver) = crate::exec::ggml::open(device, &lib_dir, config)?;
                let mut caps = gpu.caps().clone();
                caps.name = format!("{} (ggml: {})", caps.name, driver.description());
                Ok((Served::Ggml { _gpu: gpu, driver }, caps))
            }
        }
    }

    fn caps(&self) -> Option<&DeviceCaps> {
        match self {
            Served::Own { gpu, .. } => gpu.as_ref().map(Gpu::caps),
            Served::Ggml { driver, .. } => Some(driver.caps()),
        }
    }

    fn evaluate(&mut self, case: &Case, repeat: bool) -> Outcome {
        match self {
            Served::Own { device, gpu, tree } => {
                let wanted = case.model().extensions();
                let mut reopen_error = String::new();
                if gpu.as_ref().is_none_or(|g| g.device.differs_for(wanted)) {
                    drop(gpu.take()); // the old device goes before the new one is made
                    match Gpu::open_with(device.as_deref(), wanted) {
                        Ok(g) => *gpu = Some(g),
                        Err(e) => reopen_error = e.to_string(),
                    }
                }
                match gpu.as_mut() {
                    Some(gpu) => crate::exec::own::evaluate(case, gpu, tree, repeat),
                    None => Outcome::DeviceLost(format!(
                        "cannot reopen the device with extensions {wanted:?}: {reopen_error}"
                    )),
                }
            }
            Served::Ggml { driver, .. } => case.evaluate(&mut Ctx { driver, repeat }),
        }
    }

    /// What the case just evaluated dispatched (ggml workers with vkdiff's layer loaded).
    fn take_dispatched(&mut self) -> Option<crate::exec::ggml::Dispatched> {
        match self {
            Served::Own { .. } => None,
            Served::Ggml { driver, .. } => driver.take_dispatched(),
        }
    }
}

/// The worker's side: opens the target's driver, then answers requests until stdin closes.
pub fn serve(
    device: Option<&str>,
    target: WorkerTarget,
    repeat: bool,
    repeat_every: Option<u64>,
) -> std::io::Result<()> {
    let (mut input, mut output) = (std::io::stdin().lock(), std::io::stdout().lock());
    // (ggml reads its switches from the environment: this process has no other threads yet.)
    let mut served = match Served::open(device, target) {
        Ok((served, caps)) => {
            write_frame(&mut output, &Response::Ready { caps })?;
            served
        }
        Err(e) => return write_frame(&mut output, &Response::Failed(e)),
    };
    loop {
        let request: Request = match read_frame(&mut input) {
            Ok(r) => r,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                eprint!("{}", vkdiff_gpu::profile::report());
                return Ok(());
            }
            Err(e) => return Err(e),
        };
        let Request::Evaluate(json) = request;
        let outcome = match serde_json::from_str::<Case>(&json) {
            Ok(case) => {
                fault_injection(&case);
                let repeat = served
                    .caps()
                    .is_some_and(|caps| campaign_repeats(repeat, repeat_every, caps, &json));
                served.evaluate(&case, repeat)
            }
            Err(e) => Outcome::Error(format!("worker could not read the case: {e}")),
        };
        let lost = matches!(outcome, Outcome::DeviceLost(_));
        if let Some(d) = served.take_dispatched() {
            write_frame(&mut output, &Response::Dispatched(d))?;
        }
        write_frame(&mut output, &Response::Outcome(outcome))?;
        if lost {
            // The device is unusable: exit, and the parent starts a worker with a new one.
            return Ok(());
        }
    }
}

/// `VKDIFF_INJECT_CRASH=<text>` aborts the worker on a case whose description contains the
/// text: the stand-in, in tests, for a driver that segfaults inside a shader.
/// `VKDIFF_INJECT_STATE_CRASH=<text>` aborts there only when the worker evaluated another case
/// before (a driver whose state an earlier case left bad; [`AFTER_EARLIER`]).
/// `VKDIFF_INJECT_HANG=<text>` makes it hang there instead (a kernel that never finishes).
pub(crate) fn fault_injection(case: &Case) {
    static SERVED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let env = vkdiff_gpu::env::env();
    let earlier = SERVED.fetch_add(1, std::sync::atomic::Ordering::Relaxed) > 0;
    if let Some(needle) = env.inject_crash.as_deref() {
        if !needle.is_empty() && case.to_string().contains(needle) {
            std::process::abort();
        }
    }
    if let Some(needle) = env.inject_state_crash.as_deref() {
        if earlier && !needle.is_empty() && case.to_string().contains(needle) {
            std::process::abort();
        }
    }
    if let Some(needle) = env.inject_hang.as_deref() {
        if !needle.is_empty() && case.to_string().contains(needle) {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
    }
}

struct Running {
    child: Child,
    stdin: ChildStdin,
    /// The worker's answers, read from its stdout by a thread (so a wait can time out); the
    /// stream ends with the read error that stopped it.
    responses: Receiver<std::io::Result<Response>>,
    /// The worker's last stderr lines (driver and validation messages), for crash reports.
    last_words: Arc<Mutex<VecDeque<String>>>,
}

/// How many stderr lines of a worker a crash report quotes.
const LAST_WORDS: usize = 12;

/// Lines that say why a process aborted: kept among the last words before other lines.
const CAUSE_MARKS: [&str; 3] = ["GGML_ASSERT", "GGML_ABORT", "panicked at"];

/// Forwards the worker's stderr to ours, keeping the last lines.
fn keep_last_words(stderr: std::process::ChildStderr) -> Arc<Mutex<VecDeque<String>>> {
    let lines = Arc::new(Mutex::new(VecDeque::<String>::new()));
    let keep = lines.clone();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            // The Vulkan loader announces every layer enabled through the environment, so each
            // ggml worker's instances would say vkdiff's own layer is on: known, not news.
            if line.contains("[Loader Message]") && line.contains(crate::exec::ggml::layer::NAME) {
                continue;
            }
            eprintln!("{line}");
            let mut k = keep.lock().unwrap_or_else(|p| p.into_inner());
            // An abort's own message (ggml's GGML_ASSERT, a Rust panic) stays even when the
            // backtrace that follows it is longer than the tail.
            if k.len() == LAST_WORDS {
                if let Some(i) = k
                    .iter()
                    .position(|l: &String| !CAUSE_MARKS.iter().any(|m| l.contains(m)))
                {
                    k.remove(i);
                } else {
                    k.pop_front();
                }
            }
            k.push_back(line);
        }
    });
    lines
}

/// What a campaign's workers run on beside their device, as the parent knows it: typed here,
/// turned into the worker process's environment only by [`Setup::env`] and read back there only
/// by [`WorkerTarget::from_env`].
#[derive(Debug, Clone, Default)]
pub struct Setup {
    /// Extra environment for the Vulkan driver (LP_NATIVE_VECTOR_WIDTH for a lavapipe
    /// configuration) or for the tests' fault injection.
    pub driver_env: Vec<(String, String)>,
    /// Backend mode: the ggml build and path configuration the worker loads.
    pub ggml: Option<crate::exec::ggml::GgmlSetup>,
}

impl Setup {
    /// The worker process's extra environment.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut env = self.driver_env.clone();
        if let Some(g) = &self.ggml {
            env.extend(g.env());
        }
        env
    }

    /// How reports name the setup: the ggml target with its identity, else the driver's
    /// environment (`LP_NATIVE_VECTOR_WIDTH=128`), else empty.
    pub fn label(&self) -> String {
        match &self.ggml {
            Some(g) => g.label(),
            None => self
                .driver_env
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
        }
    }

    /// Nothing beyond the device.
    pub fn is_empty(&self) -> bool {
        self.driver_env.is_empty() && self.ggml.is_none()
    }
}

/// The parent's side: a worker process started on demand and restarted after a crash or a lost
/// device.
pub struct Worker {
    exe: PathBuf,
    args: Vec<String>,
    setup: Setup,
    shaders: String,
    caps: DeviceCaps,
    running: Option<Running>,
    timeout: Option<Duration>,
    /// The cases the running worker evaluated, oldest first (the last few, and how many).
    history: (VecDeque<String>, usize),
    /// How many workers were started (1 + restarts).
    pub starts: u32,
    /// What the last case dispatched (backend mode).
    dispatched: Option<crate::exec::ggml::Dispatched>,
}

/// Why a worker gave no outcome.
enum NoAnswer {
    /// It died (or spoke nonsense).
    Died,
    /// It took longer than the timeout.
    TimedOut(Duration),
}

impl Worker {
    /// A worker running `exe worker <args>` on `setup` (a lavapipe configuration, a ggml
    /// build). Starts it once to learn the device.
    pub fn new(
        exe: PathBuf,
        args: Vec<String>,
        setup: Setup,
        shaders: String,
    ) -> Result<Self, String> {
        let mut w = Worker {
            exe,
            args,
            setup,
            shaders,
            caps: DeviceCaps::default(),
            running: None,
            timeout: None,
            history: (VecDeque::new(), 0),
            starts: 0,
            dispatched: None,
        };
        w.start()?;
        Ok(w)
    }

    fn start(&mut self) -> Result<(), String> {
        let mut command = wrapped(&self.exe)?;
        end_with_parent(&mut command);
        let mut child = command
            .arg("worker")
            .args(&self.args)
            .envs(self.setup.env())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot start worker {}: {e}", self.exe.display()))?;
        let (stdin, mut stdout) = (child.stdin.take().unwrap(), child.stdout.take().unwrap());
        let last_words = keep_last_words(child.stderr.take().unwrap());
        self.starts += 1;
        self.history = (VecDeque::new(), 0);
        match read_frame::<Response>(&mut stdout) {
            Ok(Response::Ready { caps }) => self.caps = caps,
            Ok(Response::Failed(e)) => return Err(e),
            Ok(other) => return Err(format!("worker said {other:?} instead of Ready")),
            Err(e) => {
                return Err(format!(
                    "worker died while opening the device: {e} ({})",
                    child.wait().map(|s| s.to_string()).unwrap_or_default()
                ))
            }
        }
        let (send, responses) = mpsc::channel();
        std::thread::spawn(move || loop {
            let frame = read_frame::<Response>(&mut stdout);
            let end = frame.is_err();
            if send.send(frame).is_err() || end {
                return;
            }
        });
        self.running = Some(Running {
            child,
            stdin,
            responses,
            last_words,
        });
        Ok(())
    }

    /// Limits the time one case may take (None: no limit). A case that runs longer (a kernel
    /// that never finishes, say a mutated loop bound) has its worker killed and becomes a
    /// `Crash` outcome "timed out after …"; the next case starts a fresh worker.
    pub fn set_timeout(&mut self, timeout: Option<Duration>) {
        self.timeout = timeout;
    }

    /// The limit [`Worker::set_timeout`] set.
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    fn ask(&mut self, case: &Case) -> Result<Outcome, NoAnswer> {
        let r = self.running.as_mut().expect("started");
        let json = serde_json::to_string(case).map_err(|_| NoAnswer::Died)?;
        write_frame(&mut r.stdin, &Request::Evaluate(json)).map_err(|_| NoAnswer::Died)?;
        self.dispatched = None;
        loop {
            let frame = match self.timeout {
                Some(t) => r.responses.recv_timeout(t).map_err(|e| match e {
                    RecvTimeoutError::Timeout => NoAnswer::TimedOut(t),
                    RecvTimeoutError::Disconnected => NoAnswer::Died,
                })?,
                None => r.responses.recv().map_err(|_| NoAnswer::Died)?,
            };
            match frame {
                Ok(Response::Dispatched(d)) => self.dispatched = Some(d),
                Ok(Response::Outcome(o)) => return Ok(o),
                _ => return Err(NoAnswer::Died),
            }
        }
    }
}

/// Marks a crash that happened only after other cases ran in the same worker: alone, in a fresh
/// worker, the case did not crash. Such a crash is the driver's or the host's state going bad
/// (docs/ggml-backend.md: lavapipe 22.3 frees a buffer's resource twice once ggml's context
/// outlives a destroyed tensor buffer), not this case's: it keeps its own finding kind.
pub const AFTER_EARLIER: &str = "crashed only after earlier cases in the same worker";

/// Whether a crash message read back from a report file is a [`CrashKind::AfterEarlier`] one
/// (a report keeps the message, whose text says so; in process the kind is typed).
pub fn after_earlier(message: &str) -> bool {
    message.contains(AFTER_EARLIER)
}

/// What an [`AFTER_EARLIER`] message says the case gave alone in a fresh worker.
const ALONE_GAVE: &str = "alone in a fresh worker it gave ";
/// ... when that run judged nothing.
const NO_RESULT: &str = "no result (";

/// Whether a crash message read back from a report says the case, run again alone in a fresh
/// worker, was judged there (passed or failed): its recorded pipelines are that run's, so
/// pipeline coverage counts them.
pub fn judged_alone(message: &str) -> bool {
    after_earlier(message)
        && message
            .split_once(ALONE_GAVE)
            .is_some_and(|(_, gave)| !gave.starts_with(NO_RESULT))
}

/// How the crash message of a case that ran past the worker's timeout begins.
const TIMED_OUT: &str = "timed out";

/// How many of the cases before a crash its message names.
const NAMED_BEFORE: usize = 3;

impl Worker {
    /// Evaluates `case` in the running worker (started if needed), recording it in the history.
    fn evaluate_here(&mut self, case: &Case) -> Outcome {
        if self.running.is_none() {
            if let Err(e) = self.start() {
                return Outcome::Error(format!("cannot restart the worker: {e}"));
            }
        }
        let outcome = self.evaluate_once(case);
        if self.running.is_some() {
            let (named, count) = &mut self.history;
            if named.len() == NAMED_BEFORE {
                named.pop_front();
            }
            named.push_back(format!("{} {case}", case.kernel()));
            *count += 1;
        }
        outcome
    }

    fn evaluate_once(&mut self, case: &Case) -> Outcome {
        match self.ask(case) {
            Ok(outcome) => {
                if matches!(outcome, Outcome::DeviceLost(_)) {
                    // The worker exits after a lost device; reap it so the next case restarts.
                    if let Some(mut r) = self.running.take() {
                        let _ = r.child.wait();
                    }
                }
                outcome
            }
            Err(NoAnswer::TimedOut(t)) => {
                let mut r = self.running.take().expect("started");
                let _ = r.child.kill();
                let _ = r.child.wait();
                Outcome::crash(
                    CrashKind::TimedOut,
                    format!(
                        "{TIMED_OUT} after {}s (the worker was killed; a kernel that never finishes?)",
                        t.as_secs_f64()
                    ),
                )
            }
            Err(NoAnswer::Died) => {
                let mut r = self.running.take().expect("started");
                drop(r.stdin);
                let status = r
                    .child
                    .wait()
                    .map(|s| s.to_string())
                    .unwrap_or_else(|e| e.to_string());
                // Let the stderr thread catch up with what the worker printed before dying.
                std::thread::sleep(std::time::Duration::from_millis(50));
                let words: Vec<String> = r
                    .last_words
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .iter()
                    .cloned()
                    .collect();
                let tail = if words.is_empty() {
                    String::new()
                } else {
                    format!("; its last words:\n    {}", words.join("\n    "))
                };
                Outcome::crash(
                    CrashKind::Died,
                    format!("the worker process died inside this case ({status}){tail}"),
                )
            }
        }
    }
}

impl Evaluator for Worker {
    /// A worker that dies inside a case after running others is not yet the case's fault: the
    /// case runs again alone in a fresh worker, and only a second death there makes the crash
    /// its own. Otherwise the crash is recorded as [`AFTER_EARLIER`], naming the cases before it.
    fn evaluate(&mut self, case: &Case) -> Outcome {
        if self.running.is_none() {
            if let Err(e) = self.start() {
                return Outcome::Error(format!("cannot restart the worker: {e}"));
            }
        }
        let (before, count) = self.history.clone();
        let outcome = self.evaluate_here(case);
        let died = self.running.is_none() && count > 0;
        let Outcome::Crash {
            kind: CrashKind::Died,
            message: first,
        } = &outcome
        else {
            return outcome;
        };
        if !died {
            return outcome;
        }
        let alone = self.evaluate_here(case);
        match alone {
            Outcome::Crash { .. } => Outcome::crash(
                CrashKind::Died,
                format!("{first}\n(it crashed again alone in a fresh worker)"),
            ),
            alone => Outcome::crash(
                CrashKind::AfterEarlier,
                format!(
                "{AFTER_EARLIER} ({count} before it, the last: {}); {ALONE_GAVE}{}. The crash: \
                 {first}",
                Vec::from(before).join("; "),
                match &alone {
                    Outcome::Pass { verdict, .. } =>
                        format!("a pass (worst error/bound {:.3})", verdict.worst_ratio),
                    Outcome::Skip(m)
                    | Outcome::Missing(m)
                    | Outcome::Error(m)
                    | Outcome::DeviceLost(m) => format!("{NO_RESULT}{m})"),
                    o => crate::model::facts::primary_kind(o),
                }
            ),
            ),
        }
    }

    fn caps(&self) -> &DeviceCaps {
        &self.caps
    }

    fn shaders(&self) -> String {
        self.shaders.clone()
    }

    /// Backend mode: what the configuration's path does not run.
    fn variant_skip(&self, variant: &crate::model::kernels::Variant) -> Option<String> {
        let g = self.setup.ggml.as_ref()?;
        // The worker's capabilities are already narrowed to the family ggml reported.
        crate::exec::ggml::variant_skip(g.config.family(&self.caps), variant)
    }

    fn ggml(&self) -> Option<crate::exec::ggml::GgmlTarget> {
        self.setup.ggml.as_ref().map(|g| g.target())
    }

    fn take_dispatched(&mut self) -> Option<crate::exec::ggml::Dispatched> {
        self.dispatched.take()
    }

    /// Backend mode runs real graphs (ggml's own host chose the path), so only the inputs can
    /// make a case unreal.
    fn reach(&self, case: &Case) -> crate::model::facts::Reach {
        if self.setup.ggml.is_some() {
            crate::model::facts::input_reach(case)
        } else {
            crate::model::facts::reach_of(case, self.caps())
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            drop(r.stdin);
            let mut child = r.child;
            let _ = child.wait();
        }
    }
}

/// `VKDIFF_WORKER_WRAPPER`: a command line (split at whitespace) that worker processes run under,
/// e.g. `valgrind --trace-children=no --log-file=/tmp/vg.%p`, for debugging a crash that needs
/// the worker's history. The wrapper gets the binary's real path: `/proc/self/exe` would name the
/// wrapper itself.
fn wrapped(exe: &std::path::Path) -> Result<Command, String> {
    let wrapper = &vkdiff_gpu::env::env().worker_wrapper;
    let mut words = wrapper.split_whitespace();
    let Some(program) = words.next() else {
        return Ok(Command::new(exe));
    };
    let exe = if exe == std::path::Path::new("/proc/self/exe") {
        std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))?
    } else {
        exe.to_path_buf()
    };
    let mut c = Command::new(program);
    c.args(words).arg(exe);
    Ok(c)
}

/// Makes the worker end when the thread that starts it ends, and so when the parent process dies
/// in any way (killed, crashed): without it a killed campaign left its workers compiling for
/// minutes. `PR_SET_PDEATHSIG` with SIGKILL, set in the child between fork and exec (it survives
/// the exec). Linux sends the signal when the *thread* that forked exits, not the process, so a
/// [`Worker`] must live and die on the thread that started it, as every user's does (a campaign's
/// device and job threads each start, use and drop their own; restarts happen on that thread).
#[cfg(target_os = "linux")]
fn end_with_parent(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the hook runs in the forked child before exec and only makes async-signal-safe
    // system calls (prctl, getppid, _exit); it allocates nothing and takes no lock.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // The parent died between fork and prctl: no signal will come, so go now.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// Elsewhere workers end when they read the end of their stdin (the parent's exit closes it).
#[cfg(not(target_os = "linux"))]
fn end_with_parent(_command: &mut Command) {}

/// How long a worker whose stdin was closed may still run before [`exit_when_orphaned`] ends
/// it: the main loop normally reads the end of its input and exits within milliseconds.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(5);

/// The worker's own guard beside [`end_with_parent`] (which depends on the spawning thread and
/// on Linux): a thread that waits until the writer of stdin is gone (the parent closed the pipe
/// or died) and, when the process still runs [`ORPHAN_GRACE`] later (its main loop busy in a long
/// compile or a kernel that never finishes, so it did not read the end), ends it at once.
pub fn exit_when_orphaned() {
    #[cfg(unix)]
    std::thread::spawn(|| {
        let mut stdin = libc::pollfd {
            fd: 0,
            events: 0,
            revents: 0,
        };
        loop {
            // With no events asked for, poll returns only on hang-up, error or a bad fd; it
            // reads nothing, so the main loop's frames are untouched.
            // SAFETY: one valid pollfd, count 1.
            let n = unsafe { libc::poll(&mut stdin, 1, -1) };
            if n > 0 {
                break;
            }
            if n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                return;
            }
        }
        if stdin.revents & libc::POLLNVAL != 0 {
            return; // no stdin at all: nothing to watch
        }
        std::thread::sleep(ORPHAN_GRACE);
        eprintln!("vkdiff worker: stdin closed (the parent is gone) while a case ran: exiting");
        // SAFETY: ends the process without running destructors or exit handlers, which could
        // block on the device the busy main loop holds.
        unsafe { libc::_exit(3) };
    });
}

/// The running vkdiff binary, for worker processes. On Linux `/proc/self/exe`, which keeps naming
/// this image even when a rebuild replaces the file on disk mid-campaign.
pub fn own_executable() -> Result<PathBuf, String> {
    let proc_self = PathBuf::from("/proc/self/exe");
    if proc_self.exists() {
        return Ok(proc_self);
    }
    std::env::current_exe().map_err(|e| format!("cannot find my own executable: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use vkdiff_gpu::device::Extensions;

    #[test]
    fn the_race_repeat_samples_cases_on_cpu_devices_only() {
        let caps = |kind: &str| DeviceCaps {
            kind: kind.into(),
            ..Default::default()
        };
        let cases: Vec<String> = (0..400).map(|i| format!("{{\"case\":{i}}}")).collect();
        let repeated = |every, kind: &str| {
            cases
                .iter()
                .filter(|c| campaign_repeats(true, every, &caps(kind), c))
                .count()
        };
        assert_eq!(repeated(None, "discrete"), 400);
        let on_cpu = repeated(None, "cpu");
        assert!((60..140).contains(&on_cpu), "{on_cpu} of 400");
        assert_eq!(repeated(Some(1), "cpu"), 400);
        // The same case, the same answer (shrinking and replays see what the campaign saw).
        assert!(cases
            .iter()
            .all(|c| campaign_repeats(true, None, &caps("cpu"), c)
                == campaign_repeats(true, None, &caps("cpu"), c)));
        assert!(!campaign_repeats(
            false,
            Some(1),
            &caps("discrete"),
            &cases[0]
        ));
    }

    #[test]
    fn a_case_asks_for_the_extensions_of_its_path_only() {
        let repro = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/h100_q5k_cm2_f16acc.json"
        );
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(repro).unwrap()).unwrap();
        let Case::MulMm(cm2) = serde_json::from_value(json["case"].clone()).unwrap() else {
            panic!("a mul_mm case");
        };
        let with = |cm1, cm2_, a| {
            let mut c = cm2.clone();
            (c.cm1, c.cm2, c.a_type) = (cm1, cm2_, a);
            Case::MulMm(c).model().extensions()
        };
        use vkdiff_reference::DType;
        assert_eq!(with(false, false, DType::Bf16), Extensions::NONE);
        assert_eq!(
            with(false, true, DType::Q5_K),
            Extensions {
                coopmat: true,
                coopmat2: true,
                bf16: false
            }
        );
        assert_eq!(
            with(true, false, DType::Bf16),
            Extensions {
                coopmat: true,
                coopmat2: false,
                bf16: true
            }
        );
    }
}
