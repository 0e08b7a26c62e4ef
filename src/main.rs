//! The vkdiff command line: `run` (the differential campaign), `replay`, `devices`, `list`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use vkdiff::campaign::{self, Settings};
use vkdiff::cases::{Ctx, Outcome};
use vkdiff::kernels::{self, KERNELS};
use vkdiff::repro::Reproducer;
use vkdiff_gpu::device::Instance;
use vkdiff_gpu::{Gpu, ShaderTree};

#[derive(Parser)]
#[command(
    name = "vkdiff",
    version,
    about = "Differential tester for ggml-vulkan compute shaders against an exact CPU reference"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Clone)]
struct Target {
    /// Vulkan device: index or name substring (default: $VKDIFF_DEVICE, else the first discrete GPU, else the first device).
    #[arg(long)]
    device: Option<String>,
    /// Shader tree to test: ours by default, or a ggml `vulkan-shaders` folder.
    #[arg(long)]
    shaders: Option<PathBuf>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the differential campaign: every kernel × variant on one device.
    Run {
        #[command(flatten)]
        target: Target,
        /// Cases per variant.
        #[arg(long, default_value_t = 200)]
        cases: u32,
        /// Master seed (each variant derives its own cases from it).
        #[arg(long, default_value_t = 0x5EED)]
        seed: u64,
        /// Only these kernels (repeatable), e.g. -o wkv7.
        #[arg(short = 'o', long = "op")]
        ops: Vec<String>,
        /// Only variants whose name contains this, e.g. q4_0.
        #[arg(long)]
        variant: Option<String>,
        /// Output folder for reproducers.
        #[arg(long, default_value = "vkdiff-out")]
        out: PathBuf,
        /// Most evaluations spent shrinking one failure.
        #[arg(long, default_value_t = 400)]
        shrink_budget: u32,
    },
    /// Re-run a reproducer file and explain the result.
    Replay {
        /// The reproducer (JSON) written by a failing run.
        file: PathBuf,
        #[command(flatten)]
        target: Target,
    },
    /// List Vulkan devices with the capabilities that select kernel variants.
    Devices,
    /// List kernels, variants and error models.
    List,
}

fn open(target: &Target) -> Result<(Gpu, ShaderTree), String> {
    let gpu = Gpu::open(target.device.as_deref()).map_err(|e| e.to_string())?;
    let dir = target
        .shaders
        .clone()
        .unwrap_or_else(vkdiff::default_shader_dir);
    if !dir.is_dir() {
        return Err(format!("shader folder {} does not exist", dir.display()));
    }
    Ok((gpu, ShaderTree::new(dir)))
}

fn main() -> ExitCode {
    match real_main(Cli::parse()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("vkdiff: {e}");
            ExitCode::from(2)
        }
    }
}

fn real_main(cli: Cli) -> Result<ExitCode, String> {
    match cli.command {
        Command::Run {
            target,
            cases,
            seed,
            ops,
            variant,
            out,
            shrink_budget,
        } => {
            let selected = kernels::select(&ops, variant.as_deref())?;
            let (mut gpu, mut tree) = open(&target)?;
            println!(
                "device: {} ({}), shaders: {}",
                gpu.caps().name,
                gpu.caps().class(),
                tree.dir().display()
            );
            let settings = Settings {
                cases,
                seed,
                shrink_budget,
                repro_dir: Some(out.join("repro")),
            };
            let mut reports = Vec::new();
            for (kernel, v) in &selected {
                let r = campaign::run_variant(&mut gpu, &mut tree, kernel, v, &settings);
                eprintln!(
                    "{:<12} {:<28} {} cases, {} failed, {:.1}s",
                    r.kernel,
                    r.variant,
                    r.cases,
                    r.failed + r.errors,
                    r.seconds
                );
                reports.push(r);
            }
            print!("{}", campaign::table(&reports));
            let total: u32 = reports.iter().map(|r| r.cases).sum();
            let secs: f64 = reports.iter().map(|r| r.seconds).sum();
            println!(
                "{total} cases in {secs:.1}s ({:.0} cases/s)",
                total as f64 / secs.max(1e-9)
            );
            Ok(if reports.iter().all(|r| r.ok()) {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            })
        }
        Command::Replay { file, target } => {
            let repro = Reproducer::read(&file)?;
            let (mut gpu, mut tree) = open(&target)?;
            println!(
                "replaying {} on {} with {}",
                repro.variant,
                gpu.caps().name,
                tree.dir().display()
            );
            println!("case: {}", repro.case);
            match repro.case.evaluate(&mut Ctx {
                gpu: &mut gpu,
                tree: &mut tree,
            }) {
                Outcome::Pass { verdict, .. } => {
                    println!(
                        "PASS: {} elements, worst error/bound {:.3}",
                        verdict.elements, verdict.worst_ratio
                    );
                    if let Some(w) = &verdict.worst {
                        println!("worst element: {w}");
                    }
                    Ok(ExitCode::SUCCESS)
                }
                Outcome::Fail { verdict } => {
                    println!(
                        "FAIL: {} of {} elements\n{}",
                        verdict.failed,
                        verdict.elements,
                        verdict.explain()
                    );
                    Ok(ExitCode::FAILURE)
                }
                Outcome::Skip(r) => Err(format!("skipped: {r}")),
                Outcome::Missing(r) => Err(format!("missing: {r}")),
                Outcome::Error(r) => Err(format!("error: {r}")),
            }
        }
        Command::Devices => {
            let instance = Instance::new().map_err(|e| e.to_string())?;
            for a in instance.adapters().map_err(|e| e.to_string())? {
                println!("[{}] {}", a.index, a.caps);
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::List => {
            for k in KERNELS {
                println!(
                    "{} ({}): {}\n  error model: {}",
                    k.name, k.shader, k.summary, k.error_model
                );
                for v in (k.variants)() {
                    println!("  - {}", v.name);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
