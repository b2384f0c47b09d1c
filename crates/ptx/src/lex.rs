//! The PTX lexer: text to [`Token`]s with byte spans and line numbers.
//!
//! Comments are dropped (PTX comments carry nothing analyses need, and NVRTC's `// callseq`
//! markers are implied by the block structure). Newlines are tokens because a few directives
//! (`.loc`, `.file`, `.version`, ...) end at the end of their line rather than at a `;`.
//! Identifiers take their dots (`ld.global.nc.v4.f32` is one token) since PTX names cannot
//! contain dots, and registers take theirs (`%tid.x`).

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `.version`, `.f32`, `.align`
    Directive,
    /// `ld.global.f32`, `_Z6scaleddd`, `$L__BB0_2`
    Ident,
    /// `%r1`, `%tid.x`
    Reg,
    /// `42`, `0x1F`, `0f3F800000`, `1.5`
    Number,
    /// `"nounroll"` (with the quotes)
    Str,
    /// One punctuation character.
    Punct(char),
    /// An end of line: kept because line-ended directives (`.loc`, `.file`) end there and
    /// diagnostics report lines.
    Newline,
}

/// A token: its kind, its byte span in the source and its 1-based line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    /// What the token is.
    pub kind: Kind,
    /// Byte offset of its first character in the source.
    pub start: usize,
    /// Byte offset just past its last character.
    pub end: usize,
    /// The 1-based line it is on.
    pub line: u32,
}

impl Token {
    /// The token's text in `src`, the source it was lexed from.
    pub fn text<'a>(&self, src: &'a str) -> &'a str {
        &src[self.start..self.end]
    }
}

fn ident_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c == b'.'
}

/// Splits `src` into tokens. Never fails: a byte that starts no token becomes a one-character
/// [`Kind::Punct`], which the parser then reports inside the statement it spoils.
pub fn lex(src: &str) -> Vec<Token> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1u32;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let kind = match c {
            b'\n' => {
                i += 1;
                out.push(Token {
                    kind: Kind::Newline,
                    start,
                    end: i,
                    line,
                });
                line += 1;
                continue;
            }
            b' ' | b'\t' | b'\r' => {
                i += 1;
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    if b[i] == b'\n' {
                        line += 1;
                    }
                    i += 1;
                }
                i = (i + 2).min(b.len());
                continue;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' && b[i] != b'\n' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i = (i + 1).min(b.len());
                Kind::Str
            }
            b'.' if b
                .get(i + 1)
                .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_') =>
            {
                i += 1;
                while i < b.len() && ident_char(b[i]) && b[i] != b'.' {
                    i += 1;
                }
                Kind::Directive
            }
            b'%' => {
                i += 1;
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
                Kind::Reg
            }
            b'0'..=b'9' => {
                i += 1;
                while i < b.len() {
                    let d = b[i];
                    let exp_sign = (d == b'-' || d == b'+')
                        && matches!(b[i - 1], b'e' | b'E')
                        && !src[start..i].starts_with("0x")
                        && !src[start..i].starts_with("0f")
                        && !src[start..i].starts_with("0d")
                        && !src[start..i].starts_with("0X");
                    if d.is_ascii_alphanumeric() || d == b'.' || exp_sign {
                        i += 1;
                    } else {
                        break;
                    }
                }
                Kind::Number
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b'$' => {
                while i < b.len() && ident_char(b[i]) {
                    i += 1;
                }
                Kind::Ident
            }
            _ => {
                // A whole UTF-8 character, so spans stay on character boundaries.
                let ch = src[i..].chars().next().unwrap_or('?');
                i += ch.len_utf8();
                Kind::Punct(ch)
            }
        };
        out.push(Token {
            kind,
            start,
            end: i,
            line,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(src: &str) -> Vec<(Kind, &str)> {
        lex(src).iter().map(|t| (t.kind, t.text(src))).collect()
    }

    #[test]
    fn instruction_tokens() {
        assert_eq!(
            kinds("@!%p1 ld.global.nc.v4.f32 {%f1, %f2}, [%rd8+-4]; // c\n"),
            vec![
                (Kind::Punct('@'), "@"),
                (Kind::Punct('!'), "!"),
                (Kind::Reg, "%p1"),
                (Kind::Ident, "ld.global.nc.v4.f32"),
                (Kind::Punct('{'), "{"),
                (Kind::Reg, "%f1"),
                (Kind::Punct(','), ","),
                (Kind::Reg, "%f2"),
                (Kind::Punct('}'), "}"),
                (Kind::Punct(','), ","),
                (Kind::Punct('['), "["),
                (Kind::Reg, "%rd8"),
                (Kind::Punct('+'), "+"),
                (Kind::Punct('-'), "-"),
                (Kind::Number, "4"),
                (Kind::Punct(']'), "]"),
                (Kind::Punct(';'), ";"),
                (Kind::Newline, "\n"),
            ]
        );
    }

    #[test]
    fn numbers_directives_and_lines() {
        let src = ".reg .f32 %f<20>;\n/* a\nb */ mov.f32 %f1, 0f3F800000, 1.5e-3, %tid.x;";
        let toks = lex(src);
        assert_eq!(toks[0].text(src), ".reg");
        assert_eq!(toks[1].text(src), ".f32");
        assert_eq!(toks.last().map(|t| t.line), Some(3));
        let texts: Vec<&str> = toks.iter().map(|t| t.text(src)).collect();
        assert!(texts.contains(&"0f3F800000"));
        assert!(texts.contains(&"1.5e-3"));
        assert!(texts.contains(&"%tid.x"));
    }
}
