//! The name a local model is shown by: its GGUF `general.name` with the
//! quantisation the file really has. Names are often copied from the
//! upstream repository and say "AWQ" or "GGUF" whatever the file holds;
//! `general.file_type` says what it is.

use std::path::Path;

/// Words of a `general.name` that describe a packaging or quantisation,
/// not the model; dropped, since the file type replaces them.
const PACKAGING: [&str; 5] = ["AWQ", "GGUF", "GPTQ", "GGML", "EXL2"];

/// llama.cpp's file types (`llama_ftype`) by number, for those in use.
fn file_type_name(ftype: u32) -> Option<&'static str> {
    Some(match ftype {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        _ => return None,
    })
}

/// `general.name` without packaging words, then the file type: "Qwen2.5
/// Coder 0.5B Instruct Q4_K_M". Without a name, the file's stem.
pub(crate) fn shown_name(name: Option<&str>, file_type: Option<&str>, path: &Path) -> String {
    let base = name
        .map(|n| {
            n.split_whitespace()
                .filter(|w| !PACKAGING.iter().any(|p| w.eq_ignore_ascii_case(p)))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .filter(|n| !n.is_empty());
    let Some(base) = base else {
        return path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "local".to_string());
    };
    let quant = file_type
        .and_then(|t| t.trim().parse::<u32>().ok())
        .and_then(file_type_name);
    match quant {
        Some(q) if !base.to_ascii_uppercase().contains(q) => format!("{base} {q}"),
        _ => base,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_name_has_the_files_real_quantisation_not_the_upstream_label() {
        let p = Path::new("/m/qwen.gguf");
        assert_eq!(
            shown_name(Some("Qwen2.5 Coder 0.5B Instruct AWQ"), Some("15"), p),
            "Qwen2.5 Coder 0.5B Instruct Q4_K_M"
        );
        assert_eq!(
            shown_name(Some("Qwen2.5 Coder 1.5B Instruct GGUF"), Some("15"), p),
            "Qwen2.5 Coder 1.5B Instruct Q4_K_M"
        );
        assert_eq!(shown_name(Some("Tiny Q8_0"), Some("7"), p), "Tiny Q8_0");
        assert_eq!(shown_name(Some("Odd"), Some("999"), p), "Odd");
        assert_eq!(shown_name(None, Some("15"), p), "qwen");
        assert_eq!(shown_name(Some("  "), None, p), "qwen");
    }
}
