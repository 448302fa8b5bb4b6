//! The terminal: raw mode, an inline viewport at the bottom of the screen
//! whose height follows the app, finished cells inserted above it into the
//! terminal's own scrollback, and restoration on every way out.

use std::io::{self, Stdout, Write};

use crossterm::cursor::MoveTo;
use crossterm::event::{
    DisableBracketedPaste, EnableBracketedPaste, KeyboardEnhancementFlags,
    PopKeyboardEnhancementFlags, PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{Clear, ClearType as CtClear};
use ratatui::backend::{Backend, ClearType, CrosstermBackend, WindowSize};
use ratatui::buffer::Cell as BufCell;
use ratatui::layout::{Position, Rect, Size};
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Widget};
use ratatui::{Terminal, TerminalOptions, Viewport};

/// Crossterm, except that the cursor position can be told instead of asked
/// (asking the terminal races with the key reader while the app runs).
pub struct Back {
    inner: CrosstermBackend<Stdout>,
    told: Option<Position>,
}

impl Back {
    fn new(told: Option<Position>) -> Back {
        Back {
            inner: CrosstermBackend::new(io::stdout()),
            told,
        }
    }
}

impl Backend for Back {
    type Error = io::Error;
    fn draw<'a, I>(&mut self, content: I) -> io::Result<()>
    where
        I: Iterator<Item = (u16, u16, &'a BufCell)>,
    {
        self.inner.draw(content)
    }
    fn append_lines(&mut self, n: u16) -> io::Result<()> {
        self.inner.append_lines(n)
    }
    fn hide_cursor(&mut self) -> io::Result<()> {
        self.inner.hide_cursor()
    }
    fn show_cursor(&mut self) -> io::Result<()> {
        self.inner.show_cursor()
    }
    fn get_cursor_position(&mut self) -> io::Result<Position> {
        match self.told.take() {
            Some(p) => Ok(p),
            None => self.inner.get_cursor_position(),
        }
    }
    fn set_cursor_position<P: Into<Position>>(&mut self, position: P) -> io::Result<()> {
        self.inner.set_cursor_position(position)
    }
    fn clear(&mut self) -> io::Result<()> {
        self.inner.clear()
    }
    fn clear_region(&mut self, clear_type: ClearType) -> io::Result<()> {
        self.inner.clear_region(clear_type)
    }
    fn size(&self) -> io::Result<Size> {
        self.inner.size()
    }
    fn window_size(&mut self) -> io::Result<WindowSize> {
        self.inner.window_size()
    }
    fn flush(&mut self) -> io::Result<()> {
        Backend::flush(&mut self.inner)
    }
    fn scroll_region_up(&mut self, region: std::ops::Range<u16>, n: u16) -> io::Result<()> {
        self.inner.scroll_region_up(region, n)
    }
    fn scroll_region_down(&mut self, region: std::ops::Range<u16>, n: u16) -> io::Result<()> {
        self.inner.scroll_region_down(region, n)
    }
}

/// Put the terminal back as it was. Safe to call more than once and from
/// the panic hook.
/// True while the app draws on the alternate screen.
static ALT_SCREEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn restore() {
    let mut out = io::stdout();
    let _ = crossterm::execute!(
        out,
        PopKeyboardEnhancementFlags,
        DisableBracketedPaste,
        crossterm::cursor::Show
    );
    if ALT_SCREEN.load(std::sync::atomic::Ordering::SeqCst) {
        let _ = crossterm::execute!(out, crossterm::terminal::LeaveAlternateScreen);
    }
    let _ = crossterm::terminal::disable_raw_mode();
    let _ = out.flush();
}

pub struct Screen {
    term: Terminal<Back>,
    /// The viewport as last drawn.
    area: Rect,
    size: Size,
}

impl Screen {
    /// Raw mode, bracketed paste (the alternate screen if asked), and a
    /// first viewport of `height` rows.
    pub fn start(height: u16, alternate: bool) -> io::Result<Screen> {
        crossterm::terminal::enable_raw_mode()?;
        let mut out = io::stdout();
        if alternate {
            crossterm::execute!(out, crossterm::terminal::EnterAlternateScreen, MoveTo(0, 0))?;
            ALT_SCREEN.store(true, std::sync::atomic::Ordering::SeqCst);
        }
        crossterm::execute!(out, EnableBracketedPaste)?;
        // Shift+Enter is only told apart from Enter where the terminal
        // speaks the keyboard enhancement protocol.
        if matches!(
            crossterm::terminal::supports_keyboard_enhancement(),
            Ok(true)
        ) {
            let _ = crossterm::execute!(
                out,
                PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
            );
        }
        let mut term = Terminal::with_options(
            Back::new(None),
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )?;
        let size = term.size()?;
        // The viewport starts at the cursor (below what the shell, or a
        // question asked before the app, printed), not at the top.
        let area = term.get_frame().area();
        Ok(Screen { term, area, size })
    }

    /// Back in the foreground after a stop: raw mode and the app's
    /// terminal modes again (the caller resets the screen).
    pub fn resume(&mut self) -> io::Result<()> {
        crossterm::terminal::enable_raw_mode()?;
        let mut out = io::stdout();
        if ALT_SCREEN.load(std::sync::atomic::Ordering::SeqCst) {
            crossterm::execute!(out, crossterm::terminal::EnterAlternateScreen)?;
        }
        crossterm::execute!(out, EnableBracketedPaste)?;
        Ok(())
    }

    /// The terminal's size now (after a resize, before `reset`).
    pub fn current_size(&self) -> io::Result<Size> {
        self.term.size()
    }

    pub fn size(&self) -> Size {
        self.size
    }

    pub fn height(&self) -> u16 {
        self.area.height
    }

    /// A new viewport of `height` rows whose top stays where it was (the
    /// screen scrolls up when it does not fit). Also used after a resize.
    pub fn reshape(&mut self, height: u16) -> io::Result<()> {
        let size = self.term.size()?;
        let height = height.min(size.height).max(1);
        let mut top = self.area.y.min(size.height.saturating_sub(1));
        if size.width < self.size.width {
            // A narrower terminal rewraps what was drawn: start clean.
            top = top.min(size.height.saturating_sub(height));
        }
        let mut out = io::stdout();
        crossterm::execute!(out, MoveTo(0, top), Clear(CtClear::FromCursorDown))?;
        self.term = Terminal::with_options(
            Back::new(Some(Position::new(0, top))),
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )?;
        self.size = size;
        self.area = Rect::new(0, top, size.width, height);

        Ok(())
    }

    /// After a resize: clear the screen (the terminal has rewrapped what it
    /// showed) and start again at the top with a viewport of `height` rows;
    /// the caller prints the newest cells again above it.
    pub fn reset(&mut self, height: u16) -> io::Result<()> {
        let size = self.term.size()?;
        let mut out = io::stdout();
        crossterm::execute!(out, MoveTo(0, 0), Clear(CtClear::All))?;
        let height = height.min(size.height).max(1);
        self.term = Terminal::with_options(
            Back::new(Some(Position::new(0, 0))),
            TerminalOptions {
                viewport: Viewport::Inline(height),
            },
        )?;
        self.size = size;
        self.area = Rect::new(0, 0, size.width, height);
        Ok(())
    }

    /// Print finished lines above the viewport, into the scrollback.
    pub fn insert(&mut self, lines: Vec<Line<'static>>) -> io::Result<()> {
        let chunk = self.size.height.max(2) as usize;
        let mut rest = lines;
        while !rest.is_empty() {
            let tail = rest.split_off(rest.len().min(chunk));
            let part = std::mem::replace(&mut rest, tail);
            let n = part.len() as u16;
            self.term.insert_before(n, |buf| {
                Paragraph::new(part).render(buf.area, buf);
            })?;
            // The viewport moved down (until it reached the bottom).
            let lowest = self.size.height.saturating_sub(self.area.height);
            self.area.y = (self.area.y + n).min(lowest);
        }
        Ok(())
    }

    pub fn draw(&mut self, f: impl FnOnce(&mut ratatui::Frame)) -> io::Result<()> {
        let mut area = self.area;
        self.term.draw(|frame| {
            area = frame.area();
            f(frame)
        })?;
        self.area = area;
        Ok(())
    }

    /// Erase the app's viewport and leave the cursor where it began, so
    /// what is printed next (the resume hint, the shell prompt) comes
    /// right after the transcript. Written directly, not through the
    /// terminal's buffers: it must land whatever state they are in.
    pub fn finish(&mut self) {
        let _ = crossterm::execute!(
            io::stdout(),
            MoveTo(0, self.area.y),
            Clear(CtClear::FromCursorDown)
        );
    }
}
