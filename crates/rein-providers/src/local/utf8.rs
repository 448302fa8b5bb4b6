//! Turning token bytes into text when one character may span tokens.

/// Collects token pieces and hands out only complete UTF-8 text; bytes of a
/// character still being spelled out are kept for the next piece.
#[derive(Debug, Default)]
pub(crate) struct PieceDecoder {
    pending: Vec<u8>,
}

impl PieceDecoder {
    /// Add a token's bytes; returns the text now complete (maybe empty).
    /// Invalid bytes become U+FFFD.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        let mut start = 0;
        loop {
            match std::str::from_utf8(&self.pending[start..]) {
                Ok(s) => {
                    out.push_str(s);
                    start = self.pending.len();
                    break;
                }
                Err(e) => {
                    let valid = start + e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.pending[start..valid]));
                    match e.error_len() {
                        // An incomplete character at the end: wait for more.
                        None => {
                            start = valid;
                            break;
                        }
                        Some(n) => {
                            out.push('\u{FFFD}');
                            start = valid + n;
                        }
                    }
                }
            }
        }
        self.pending.drain(..start);
        out
    }

    /// The generation ended: whatever is left, lossily.
    pub(crate) fn finish(&mut self) -> String {
        let out = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_across_pieces_comes_out_whole() {
        let bytes = "héllo €".as_bytes();
        let mut d = PieceDecoder::default();
        let mut out = String::new();
        for b in bytes {
            out.push_str(&d.push(&[*b]));
        }
        out.push_str(&d.finish());
        assert_eq!(out, "héllo €");
        let mut d = PieceDecoder::default();
        assert_eq!(d.push(&[0xe2, 0x82]), "");
        assert_eq!(d.push(&[0xac, b'!']), "€!");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut d = PieceDecoder::default();
        assert_eq!(d.push(&[b'a', 0xff, b'b']), "a\u{FFFD}b");
        assert_eq!(d.push(&[0xe2]), "");
        assert_eq!(d.finish(), "\u{FFFD}");
    }
}
