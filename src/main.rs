//! The vkdiff binary: parse, run, report an error with exit status 2.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match vkdiff::cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    match vkdiff::cli::run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("vkdiff: {e}");
            ExitCode::from(2)
        }
    }
}
