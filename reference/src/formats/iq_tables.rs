//! The lattice and sign tables of the i-quants (ggml-common.h's `iq2xxs_grid`, `iq2xs_grid`,
//! `iq2s_grid`, `iq3xxs_grid`, `iq3s_grid`, `iq1s_grid`, `ksigns_iq2xs`), read from
//! `reference/data/iq_grids.json`, a copy of the project's data file (format-definition data
//! from ggml, MIT licence; its `source` field names the commit). The values are never retyped:
//! this module parses the file once, and the GPU crate generates the shaders' GLSL tables from
//! the same parse ([`iq_grids`]).

use std::sync::OnceLock;

/// The JSON text, embedded at build time.
pub const IQ_GRIDS_JSON: &str = include_str!("../../data/iq_grids.json");

/// The parsed tables. Grid rows keep ggml's byte order: byte j (bits 8j..8j+7 of the u64 or
/// u32) is element j of the row.
#[derive(Debug, Clone, PartialEq)]
pub struct IqGrids {
    /// `ksigns_iq2xs[128]`: 7 sign bits plus an even-parity 8th bit.
    pub ksigns_iq2xs: Vec<u8>,
    /// `iq2xxs_grid[256]`: 8 unsigned magnitudes per row.
    pub iq2xxs: Vec<u64>,
    /// `iq2xs_grid[512]`.
    pub iq2xs: Vec<u64>,
    /// `iq2s_grid[1024]`.
    pub iq2s: Vec<u64>,
    /// `iq3xxs_grid[256]`: 4 unsigned magnitudes per row.
    pub iq3xxs: Vec<u32>,
    /// `iq3s_grid[512]`.
    pub iq3s: Vec<u32>,
    /// `iq1s_grid[2048]`: 8 signed bytes in {−1, 0, +1} per row.
    pub iq1s: Vec<u64>,
    /// `IQ1S_DELTA` (= `IQ1M_DELTA`), the shift added to every iq1 grid value.
    pub iq1_delta: f32,
}

#[derive(serde::Deserialize)]
struct File {
    constants: std::collections::HashMap<String, String>,
    tables: std::collections::HashMap<String, Table>,
}

#[derive(serde::Deserialize)]
struct Table {
    #[serde(rename = "type")]
    ty: String,
    length: usize,
    values: Vec<serde_json::Value>,
}

impl Table {
    /// The values as integers (u8 tables: JSON numbers; u32/u64 tables: "0x…" strings),
    /// checked against the declared length.
    fn ints(&self, name: &str, want_len: usize) -> Vec<u64> {
        assert_eq!(self.length, want_len, "{name}: declared length");
        assert_eq!(self.values.len(), want_len, "{name}: number of values");
        let v: Vec<u64> = self
            .values
            .iter()
            .map(|v| match v {
                serde_json::Value::Number(n) => n.as_u64().expect("unsigned"),
                serde_json::Value::String(s) => {
                    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex")
                }
                other => panic!("{name}: unexpected value {other}"),
            })
            .collect();
        let max = match self.ty.as_str() {
            "uint8" => u64::from(u8::MAX),
            "uint32" => u64::from(u32::MAX),
            "uint64" => u64::MAX,
            t => panic!("{name}: unknown type {t}"),
        };
        assert!(v.iter().all(|&x| x <= max), "{name}: value out of range");
        v
    }
}

/// The tables, parsed on first use.
pub fn iq_grids() -> &'static IqGrids {
    static GRIDS: OnceLock<IqGrids> = OnceLock::new();
    GRIDS.get_or_init(|| parse(IQ_GRIDS_JSON))
}

fn parse(text: &str) -> IqGrids {
    let f: File = serde_json::from_str(text).expect("iq_grids.json parses");
    let t = |name: &str, len: usize| f.tables[name].ints(name, len);
    let delta = |name: &str| -> f32 {
        f.constants[name]
            .trim_end_matches('f')
            .parse()
            .expect("float constant")
    };
    let (d1s, d1m) = (delta("IQ1S_DELTA"), delta("IQ1M_DELTA"));
    assert_eq!(d1s, d1m, "iq1_s and iq1_m share one delta in this code");
    IqGrids {
        ksigns_iq2xs: t("ksigns_iq2xs", 128).iter().map(|&x| x as u8).collect(),
        iq2xxs: t("iq2xxs_grid", 256),
        iq2xs: t("iq2xs_grid", 512),
        iq2s: t("iq2s_grid", 1024),
        iq3xxs: t("iq3xxs_grid", 256).iter().map(|&x| x as u32).collect(),
        iq3s: t("iq3s_grid", 512).iter().map(|&x| x as u32).collect(),
        iq1s: t("iq1s_grid", 2048),
        iq1_delta: d1s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_have_ggml_shapes_and_invariants() {
        let g = iq_grids();
        // ksigns[k] = k | parity(k) << 7 (the shaders recompute it this way).
        for (k, &s) in g.ksigns_iq2xs.iter().enumerate() {
            assert_eq!(u32::from(s), k as u32 | ((k as u32).count_ones() % 2) << 7);
        }
        // Grid magnitudes (their sizes carry the exactness arguments of the decoders): iq2
        // rows from {8, 25, 43}, iq3xxs at most 62, iq3s odd and at most 15.
        let bytes = |x: u64, n: usize| (0..n).map(move |j| (x >> (8 * j)) as u8);
        for row in g.iq2xxs.iter().chain(&g.iq2xs).chain(&g.iq2s) {
            assert!(bytes(*row, 8).all(|b| [8, 25, 43].contains(&b)), "{row:#x}");
        }
        for row in &g.iq3xxs {
            assert!(
                bytes(u64::from(*row), 4).all(|b| (1..=62).contains(&b)),
                "{row:#x}"
            );
        }
        for row in &g.iq3s {
            assert!(
                bytes(u64::from(*row), 4).all(|b| b % 2 == 1 && b <= 15),
                "{row:#x}"
            );
        }
        for row in &g.iq1s {
            assert!(
                bytes(*row, 8).all(|b| matches!(b, 0x00 | 0x01 | 0xFF)),
                "{row:#x}"
            );
        }
        assert_eq!(g.iq1_delta, 0.125);
        // First rows, read off the JSON file by eye.
        assert_eq!(g.iq2xxs[0], 0x0808080808080808);
        assert_eq!(g.iq3s[0], 0x01010101);
        assert_eq!(g.iq1s[0], u64::MAX);
    }
}
