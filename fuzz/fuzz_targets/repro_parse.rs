//! Reproducer files from any bytes: parsing, validation and display must never panic, and a
//! file that parses must survive a write/parse round trip unchanged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vkdiff::repro::Reproducer;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(r) = Reproducer::parse(&text) {
        let _ = r.case.validate();
        let _ = r.case.to_string();
        let again = Reproducer::parse(&serde_json::to_string(&r).unwrap()).expect("round trip");
        assert_eq!(again.case, r.case);
    }
});
