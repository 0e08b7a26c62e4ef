//! The command line from any arguments: clap parsing and the checks `run` makes before touching
//! a device (kernel and variant selection) must never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vkdiff::cli::{parse_from, Command};

fuzz_target!(|args: Vec<String>| {
    let argv = std::iter::once("vkdiff".to_string()).chain(args);
    if let Ok(cli) = parse_from(argv) {
        if let Command::Run { ops, variant, .. } = &cli.command {
            let _ = vkdiff::cases::select(&ops[..], variant.as_deref());
        }
    }
});
