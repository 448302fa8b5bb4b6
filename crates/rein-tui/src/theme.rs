//! Colours and styles, degraded to what the terminal can show.
//!
//! Every widget asks the theme for a style by role; the theme decides how
//! much colour that role gets: 24-bit where the terminal says it has it
//! (`COLORTERM=truecolor|24bit`), the nearest of the 256-colour palette
//! otherwise, the 16 ANSI colours on basic terminals, and no colour at all
//! (only bold, italic, dim and reverse) under `NO_COLOR` or `TERM=dumb`.

use ratatui::style::{Color, Modifier, Style};

/// How much colour the terminal can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ColorLevel {
    None,
    Ansi16,
    Ansi256,
    TrueColor,
}

impl ColorLevel {
    /// From the environment: `NO_COLOR` (any non-empty value) wins, then
    /// `COLORTERM`, then `TERM`.
    pub fn detect() -> ColorLevel {
        let var = |k: &str| std::env::var(k).unwrap_or_default();
        Self::from_env(&var("NO_COLOR"), &var("COLORTERM"), &var("TERM"))
    }

    pub fn from_env(no_color: &str, colorterm: &str, term: &str) -> ColorLevel {
        if !no_color.is_empty() || term == "dumb" {
            return ColorLevel::None;
        }
        let ct = colorterm.to_ascii_lowercase();
        if ct == "truecolor" || ct == "24bit" {
            return ColorLevel::TrueColor;
        }
        if term.contains("256color") {
            return ColorLevel::Ansi256;
        }
        ColorLevel::Ansi16
    }
}

/// What a piece of text is; the theme maps each role to a style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Text,
    Dim,
    Heading,
    Emphasis,
    Strong,
    InlineCode,
    CodeBlock,
    Link,
    Quote,
    ListMarker,
    Rule,
    Keyword,
    StringLit,
    Comment,
    Number,
    TypeName,
    Function,
    DiffAdd,
    DiffDel,
    DiffHunk,
    DiffMeta,
    Error,
    Warning,
    Ok,
    Accent,
    User,
    Selected,
}

/// An RGB colour with its 16-colour fallback.
#[derive(Debug, Clone, Copy)]
struct Tint {
    rgb: (u8, u8, u8),
    basic: Color,
}

const fn tint(r: u8, g: u8, b: u8, basic: Color) -> Tint {
    Tint {
        rgb: (r, g, b),
        basic,
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Theme {
    pub level: ColorLevel,
}

impl Default for Theme {
    fn default() -> Self {
        Theme::detect()
    }
}

impl Theme {
    pub fn detect() -> Theme {
        Theme {
            level: ColorLevel::detect(),
        }
    }

    /// No colour at all: what snapshots of layout use.
    pub fn plain() -> Theme {
        Theme {
            level: ColorLevel::None,
        }
    }

    pub fn with_level(level: ColorLevel) -> Theme {
        Theme { level }
    }

    pub fn colored(&self) -> bool {
        self.level != ColorLevel::None
    }

    fn color(&self, t: Tint) -> Option<Color> {
        match self.level {
            ColorLevel::None => None,
            ColorLevel::Ansi16 => Some(t.basic),
            ColorLevel::Ansi256 => Some(Color::Indexed(rgb_to_256(t.rgb))),
            ColorLevel::TrueColor => Some(Color::Rgb(t.rgb.0, t.rgb.1, t.rgb.2)),
        }
    }

    fn fg(&self, t: Tint) -> Style {
        match self.color(t) {
            Some(c) => Style::new().fg(c),
            None => Style::new(),
        }
    }

    /// The style of one role.
    pub fn style(&self, role: Role) -> Style {
        let m = Modifier::empty();
        match role {
            Role::Text => Style::new(),
            Role::Dim => Style::new().add_modifier(Modifier::DIM),
            Role::Heading => self
                .fg(tint(0x7a, 0xa2, 0xf7, Color::Blue))
                .add_modifier(Modifier::BOLD),
            Role::Emphasis => Style::new().add_modifier(Modifier::ITALIC),
            Role::Strong => Style::new().add_modifier(Modifier::BOLD),
            Role::InlineCode => self.fg(tint(0xe0, 0xaf, 0x68, Color::Yellow)),
            Role::CodeBlock => self.fg(tint(0xc0, 0xca, 0xf5, Color::Reset)),
            Role::Link => self
                .fg(tint(0x7d, 0xcf, 0xff, Color::Cyan))
                .add_modifier(Modifier::UNDERLINED),
            Role::Quote => self
                .fg(tint(0x9a, 0xa5, 0xce, Color::Gray))
                .add_modifier(Modifier::ITALIC),
            Role::ListMarker => self.fg(tint(0x7a, 0xa2, 0xf7, Color::Blue)),
            Role::Rule => Style::new().add_modifier(Modifier::DIM),
            Role::Keyword => self.fg(tint(0xbb, 0x9a, 0xf7, Color::Magenta)),
            Role::StringLit => self.fg(tint(0x9e, 0xce, 0x6a, Color::Green)),
            Role::Comment => self
                .fg(tint(0x73, 0x7a, 0xa2, Color::DarkGray))
                .add_modifier(Modifier::ITALIC),
            Role::Number => self.fg(tint(0xff, 0x9e, 0x64, Color::LightRed)),
            Role::TypeName => self.fg(tint(0x2a, 0xc3, 0xde, Color::Cyan)),
            Role::Function => self.fg(tint(0x7a, 0xa2, 0xf7, Color::LightBlue)),
            Role::DiffAdd => self.fg(tint(0x9e, 0xce, 0x6a, Color::Green)),
            Role::DiffDel => self.fg(tint(0xf7, 0x76, 0x8e, Color::Red)),
            Role::DiffHunk => self.fg(tint(0x7d, 0xcf, 0xff, Color::Cyan)),
            Role::DiffMeta => Style::new().add_modifier(Modifier::BOLD),
            Role::Error => self.fg(tint(0xf7, 0x76, 0x8e, Color::Red)),
            Role::Warning => self.fg(tint(0xe0, 0xaf, 0x68, Color::Yellow)),
            Role::Ok => self.fg(tint(0x9e, 0xce, 0x6a, Color::Green)),
            Role::Accent => self
                .fg(tint(0x7d, 0xcf, 0xff, Color::Cyan))
                .add_modifier(Modifier::BOLD),
            Role::User => self
                .fg(tint(0xc0, 0xca, 0xf5, Color::White))
                .add_modifier(Modifier::BOLD),
            Role::Selected => Style::new().add_modifier(Modifier::REVERSED | m),
        }
    }
}

/// The nearest colour of the xterm 256-colour cube or grey ramp.
pub fn rgb_to_256((r, g, b): (u8, u8, u8)) -> u8 {
    let level = |v: u8| -> u8 {
        // Cube levels are 0, 95, 135, 175, 215, 255.
        if v < 48 {
            0
        } else if v < 115 {
            1
        } else {
            (v - 35) / 40
        }
    };
    let (ri, gi, bi) = (level(r), level(g), level(b));
    let cube_val = |i: u8| if i == 0 { 0 } else { 55 + 40 * i as u32 };
    let cube = 16 + 36 * ri + 6 * gi + bi;
    let dist = |a: (u32, u32, u32)| {
        let d = |x: u32, y: u8| (x as i64 - y as i64).pow(2);
        d(a.0, r) + d(a.1, g) + d(a.2, b)
    };
    let cube_d = dist((cube_val(ri), cube_val(gi), cube_val(bi)));
    let avg = (r as u32 + g as u32 + b as u32) / 3;
    let gi_ = if avg > 238 {
        23
    } else {
        avg.saturating_sub(3) / 10
    };
    let gv = 8 + 10 * gi_;
    let grey_d = dist((gv, gv, gv));
    if grey_d < cube_d {
        232 + gi_ as u8
    } else {
        cube
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_wins_over_a_truecolor_terminal() {
        assert_eq!(
            ColorLevel::from_env("1", "truecolor", "xterm-256color"),
            ColorLevel::None
        );
        assert_eq!(ColorLevel::from_env("", "", "dumb"), ColorLevel::None);
    }

    #[test]
    fn color_level_follows_colorterm_then_term() {
        assert_eq!(
            ColorLevel::from_env("", "24bit", "xterm"),
            ColorLevel::TrueColor
        );
        assert_eq!(
            ColorLevel::from_env("", "", "screen-256color"),
            ColorLevel::Ansi256
        );
        assert_eq!(ColorLevel::from_env("", "", "xterm"), ColorLevel::Ansi16);
    }

    #[test]
    fn plain_theme_has_no_colours_only_modifiers() {
        let t = Theme::plain();
        for role in [Role::Keyword, Role::DiffAdd, Role::Error, Role::Heading] {
            let s = t.style(role);
            assert_eq!(s.fg, None, "{role:?}");
            assert_eq!(s.bg, None, "{role:?}");
        }
        assert!(t.style(Role::Heading).add_modifier.contains(Modifier::BOLD));
    }

    #[test]
    fn colours_degrade_to_the_palette_the_terminal_has() {
        let add = |l| Theme::with_level(l).style(Role::DiffAdd).fg;
        assert_eq!(add(ColorLevel::Ansi16), Some(Color::Green));
        assert!(matches!(add(ColorLevel::Ansi256), Some(Color::Indexed(_))));
        assert!(matches!(add(ColorLevel::TrueColor), Some(Color::Rgb(..))));
    }

    #[test]
    fn rgb_to_256_maps_pure_colours_and_greys() {
        assert_eq!(rgb_to_256((0, 0, 0)), 16);
        assert_eq!(rgb_to_256((255, 255, 255)), 231);
        assert_eq!(rgb_to_256((255, 0, 0)), 196);
        assert_eq!(rgb_to_256((128, 128, 128)), 244);
    }
}
