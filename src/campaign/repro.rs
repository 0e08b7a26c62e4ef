//! Reproducer files: a failing (shrunk) case as JSON, with what failed and how to replay it.
//! Inputs are not stored: the case regenerates them bit for bit from its seed.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::model::cases::Case;

/// Format version written into every file.
pub const FORMAT: u32 = 1;

/// The contents of a reproducer file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reproducer {
    /// Format version ([`FORMAT`]).
    pub vkdiff_reproducer: u32,
    /// The kernel.
    pub kernel: String,
    /// The variant that failed.
    pub variant: String,
    /// The device it failed on.
    pub device: String,
    /// The shader tree it was compiled from (empty: vkdiff's own).
    pub shaders: String,
    /// Backend mode: the ggml tree and configuration it ran through (absent: vkdiff's own
    /// runners over `shaders`). `vkdiff replay` reruns it through the same backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ggml: Option<GgmlTarget>,
    /// What failed, as reported (elements, got, want, bound, ratio).
    pub finding: String,
    /// How much shrinking reduced the case: "shrunk from …".
    pub shrunk_from: String,
    /// The case itself.
    pub case: Case,
}

pub use crate::exec::ggml::GgmlTarget;

impl Reproducer {
    /// Writes the file into `dir` (created if needed), named after the variant and seed.
    pub fn write(&self, dir: &Path) -> std::io::Result<PathBuf> {
        std::fs::create_dir_all(dir)?;
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let stem = format!("{}-{:016x}", self.variant, fxhash(&json));
        let path = dir.join(format!("{stem}.json"));
        std::fs::write(&path, json + "\n")?;
        Ok(path)
    }

    /// Reads a reproducer; the error names the file and what is wrong with it.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Parses reproducer JSON (never panics, whatever the bytes).
    pub fn parse(text: &str) -> Result<Self, String> {
        let r: Reproducer =
            serde_json::from_str(text).map_err(|e| format!("not a vkdiff reproducer: {e}"))?;
        if r.vkdiff_reproducer != FORMAT {
            return Err(format!(
                "reproducer format {} (this vkdiff reads {FORMAT})",
                r.vkdiff_reproducer
            ));
        }
        Ok(r)
    }
}

/// A stable 64-bit FNV-1a hash for file names.
fn fxhash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}
