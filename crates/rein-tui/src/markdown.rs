//! Markdown to terminal lines: pulldown-cmark's events, word-wrapped to a
//! width in display columns, styled by the theme.
//!
//! It is called again on a growing string while a model streams its
//! answer, so it renders any prefix of a document sensibly (an unclosed
//! code fence is a code block so far) and costs time linear in the input.

use crate::highlight::{clean_line, highlight};
use crate::theme::{Role, Theme};
use pulldown_cmark::{Alignment, CodeBlockKind, Event, Options, Parser, Tag, TagEnd};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use unicode_width::UnicodeWidthStr;

mod wrap;

use wrap::*;

/// The text of `lines`: spans concatenated, lines joined with `\n`.
pub fn plain_text(lines: &[Line]) -> String {
    lines
        .iter()
        .map(|l| {
            l.spans
                .iter()
                .map(|s| s.content.as_ref())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Renders markdown `src` into lines at most `width` columns wide (code
/// blocks are cut, not wrapped).
pub fn render_markdown(src: &str, width: u16, theme: &Theme) -> Vec<Line<'static>> {
    let opts = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events: Vec<Event> = Parser::new_ext(src, opts).collect();
    let mut r = Renderer {
        theme,
        width: usize::from(width).max(1),
        out: Vec::new(),
        containers: Vec::new(),
        lists: Vec::new(),
        pending_blank: false,
        blank_due: None,
        inline: Vec::new(),
        styles: Vec::new(),
        quotes: 0,
        heading: false,
        links: Vec::new(),
        code: None,
        html: None,
        table: None,
    };
    for i in 0..events.len() {
        r.event(&events, i);
    }
    r.flush_inline();
    r.out
}

/// Styled text: what inline events collect before a block is wrapped.
type Seg = (String, Style);

/// A block quote or list item: what it puts before each line.
struct Container {
    first: Vec<Span<'static>>,
    rest: Vec<Span<'static>>,
    first_used: bool,
}

struct List {
    next: Option<u64>,
    loose: bool,
    items: usize,
}

struct Table {
    aligns: Vec<Alignment>,
    /// (is the header, cells)
    rows: Vec<(bool, Vec<Vec<Seg>>)>,
    cur: Vec<Vec<Seg>>,
}

struct Renderer<'t> {
    theme: &'t Theme,
    width: usize,
    out: Vec<Line<'static>>,
    containers: Vec<Container>,
    lists: Vec<List>,
    pending_blank: bool,
    /// A separating blank line, drawn only once something follows it (so
    /// that a block that draws nothing, like an empty fence while
    /// streaming, leaves no blank line at the end).
    blank_due: Option<Line<'static>>,
    inline: Vec<Seg>,
    styles: Vec<Style>,
    quotes: usize,
    heading: bool,
    /// (url, index in `inline` where the link text starts, is an image)
    links: Vec<(String, usize, bool)>,
    code: Option<(String, String)>,
    html: Option<String>,
    table: Option<Table>,
}

fn width_of(spans: &[Span]) -> usize {
    spans.iter().map(|s| s.content.width()).sum()
}

/// Whether the list starting at `events[start]` is loose (its items hold
/// paragraphs); pulldown-cmark drops the paragraphs of tight lists.
fn list_is_loose(events: &[Event], start: usize) -> bool {
    let mut depth = 0usize;
    for i in start + 1..events.len() {
        match &events[i] {
            Event::Start(Tag::List(_)) => depth += 1,
            Event::End(TagEnd::List(_)) if depth == 0 => return false,
            Event::End(TagEnd::List(_)) => depth -= 1,
            Event::Start(Tag::Item) if depth == 0 => {
                if matches!(events.get(i + 1), Some(Event::Start(Tag::Paragraph))) {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

impl Renderer<'_> {
    fn style(&self, role: Role) -> Style {
        self.theme.style(role)
    }

    fn current_style(&self) -> Style {
        let mut s = Style::new();
        if self.quotes > 0 {
            s = s.patch(self.style(Role::Quote));
        }
        if self.heading {
            s = s.patch(self.style(Role::Heading));
        }
        for p in &self.styles {
            s = s.patch(*p);
        }
        s
    }

    fn push_inline(&mut self, text: &str, style: Style) {
        let text = clean_line(&text.replace('\n', " "));
        self.inline.push((text, style));
    }

    /// The columns left for content after the containers' prefixes.
    fn avail(&self) -> usize {
        let pw: usize = self.containers.iter().map(|c| width_of(&c.rest)).sum();
        self.width.saturating_sub(pw).max(1)
    }

    fn emit(&mut self, content: Vec<Span<'static>>) {
        if let Some(blank) = self.blank_due.take() {
            self.out.push(blank);
        }
        let mut spans: Vec<Span<'static>> = Vec::new();
        for c in &mut self.containers {
            if c.first_used {
                spans.extend(c.rest.iter().cloned());
            } else {
                c.first_used = true;
                spans.extend(c.first.iter().cloned());
            }
        }
        if content.iter().all(|s| s.content.trim().is_empty()) {
            trim_end(&mut spans);
        } else {
            spans.extend(content);
        }
        self.out.push(Line::from(merge(spans)));
    }

    fn emit_blank(&mut self) {
        let mut spans: Vec<Span<'static>> = self
            .containers
            .iter()
            .flat_map(|c| c.rest.iter().cloned())
            .collect();
        trim_end(&mut spans);
        self.blank_due = Some(Line::from(merge(spans)));
    }

    fn flush_inline(&mut self) {
        if self.inline.iter().all(|(t, _)| t.trim().is_empty()) {
            self.inline.clear();
            return;
        }
        let segs = std::mem::take(&mut self.inline);
        for line in wrap(&segs, self.avail()) {
            self.emit(line);
        }
    }

    /// Before a block: finish loose inline text, then the blank line that
    /// separates it from the previous block.
    fn begin_block(&mut self) {
        self.flush_inline();
        if self.pending_blank && !self.out.is_empty() {
            self.emit_blank();
        }
        self.pending_blank = false;
    }

    fn event(&mut self, events: &[Event], i: usize) {
        match &events[i] {
            Event::Start(tag) => self.start(tag, events, i),
            Event::End(tag) => self.end(*tag),
            Event::Text(t) => {
                if let Some((_, code)) = &mut self.code {
                    code.push_str(t);
                } else if let Some(html) = &mut self.html {
                    html.push_str(t);
                } else {
                    self.push_inline(t, self.current_style());
                }
            }
            Event::Code(t) => {
                let s = self.current_style().patch(self.style(Role::InlineCode));
                self.push_inline(t, s);
            }
            Event::Html(t) => match &mut self.html {
                Some(html) => html.push_str(t),
                None => self.push_inline(t, self.current_style()),
            },
            Event::InlineHtml(t) | Event::InlineMath(t) | Event::DisplayMath(t) => {
                self.push_inline(t, self.current_style());
            }
            Event::FootnoteReference(t) => {
                self.push_inline(&format!("[^{t}]"), self.current_style())
            }
            Event::SoftBreak => self.inline.push((" ".into(), self.current_style())),
            Event::HardBreak => self.inline.push(("\n".into(), self.current_style())),
            Event::Rule => {
                self.begin_block();
                let rule = "─".repeat(self.avail());
                self.emit(vec![Span::styled(rule, self.style(Role::Rule))]);
                self.pending_blank = true;
            }
            Event::TaskListMarker(done) => {
                let mark = if *done { "[x] " } else { "[ ] " };
                let style = self.style(Role::ListMarker);
                if let Some(c) = self.containers.last_mut() {
                    c.first.push(Span::styled(mark, style));
                    c.rest.push(Span::raw("    "));
                }
            }
        }
    }

    fn start(&mut self, tag: &Tag, events: &[Event], i: usize) {
        match tag {
            Tag::Paragraph => self.begin_block(),
            Tag::Heading { level, .. } => {
                self.begin_block();
                self.heading = true;
                let marks = "#".repeat(*level as usize);
                self.push_inline(&format!("{marks} "), self.current_style());
            }
            Tag::BlockQuote(_) => {
                self.begin_block();
                let bar = vec![Span::styled("▌ ", self.style(Role::Quote))];
                self.containers.push(Container {
                    first: bar.clone(),
                    rest: bar,
                    first_used: false,
                });
                self.quotes += 1;
            }
            Tag::CodeBlock(kind) => {
                self.begin_block();
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => info
                        .split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}')
                        .map(|s| s.trim_start_matches('.'))
                        .find(|s| !s.is_empty())
                        .unwrap_or("")
                        .to_string(),
                    CodeBlockKind::Indented => String::new(),
                };
                self.code = Some((lang, String::new()));
            }
            Tag::HtmlBlock => {
                self.begin_block();
                self.html = Some(String::new());
            }
            Tag::List(start) => {
                self.begin_block();
                self.lists.push(List {
                    next: *start,
                    loose: list_is_loose(events, i),
                    items: 0,
                });
            }
            Tag::Item => {
                self.flush_inline();
                let depth = self.lists.len().max(1);
                let (marker, blank) = match self.lists.last_mut() {
                    Some(l) => {
                        l.items += 1;
                        let marker = match &mut l.next {
                            Some(n) => {
                                let m = format!("{n}. ");
                                *n += 1;
                                m
                            }
                            None => ["• ", "◦ ", "▪ "][(depth - 1) % 3].to_string(),
                        };
                        (marker, l.loose && l.items > 1)
                    }
                    None => ("• ".to_string(), false),
                };
                if blank && !self.out.is_empty() {
                    self.emit_blank();
                }
                self.pending_blank = false;
                let pad = " ".repeat(marker.width());
                self.containers.push(Container {
                    first: vec![Span::styled(marker, self.style(Role::ListMarker))],
                    rest: vec![Span::raw(pad)],
                    first_used: false,
                });
            }
            Tag::Table(aligns) => {
                self.begin_block();
                self.table = Some(Table {
                    aligns: aligns.clone(),
                    rows: Vec::new(),
                    cur: Vec::new(),
                });
            }
            Tag::TableHead | Tag::TableRow => {
                if let Some(t) = &mut self.table {
                    t.cur.clear();
                }
            }
            Tag::TableCell => self.inline.clear(),
            Tag::Emphasis => self.styles.push(self.style(Role::Emphasis)),
            Tag::Strong => self.styles.push(self.style(Role::Strong)),
            Tag::Strikethrough => self
                .styles
                .push(Style::new().add_modifier(Modifier::CROSSED_OUT)),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => {
                let image = matches!(tag, Tag::Image { .. });
                self.styles.push(self.style(Role::Link));
                if image {
                    self.push_inline("[", self.current_style());
                }
                self.links
                    .push((dest_url.to_string(), self.inline.len(), image));
            }
            Tag::FootnoteDefinition(_)
            | Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::MetadataBlock(_) => self.begin_block(),
            Tag::Superscript | Tag::Subscript => self.styles.push(Style::new()),
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph
            | TagEnd::FootnoteDefinition
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::MetadataBlock(_) => {
                self.flush_inline();
                self.pending_blank = true;
            }
            TagEnd::Heading(_) => {
                self.flush_inline();
                self.heading = false;
                self.pending_blank = true;
            }
            TagEnd::BlockQuote(_) => {
                self.flush_inline();
                self.containers.pop();
                self.quotes = self.quotes.saturating_sub(1);
                self.pending_blank = true;
            }
            TagEnd::CodeBlock => {
                if let Some((lang, code)) = self.code.take() {
                    self.code_block(&code, &lang);
                }
                self.pending_blank = true;
            }
            TagEnd::HtmlBlock => {
                if let Some(html) = self.html.take() {
                    let style = self.current_style();
                    for line in html.lines() {
                        self.push_inline(line, style);
                        self.inline.push(("\n".into(), style));
                    }
                    self.flush_inline();
                }
                self.pending_blank = true;
            }
            TagEnd::List(_) => {
                self.flush_inline();
                self.lists.pop();
                self.pending_blank = true;
            }
            TagEnd::Item => {
                self.flush_inline();
                if self.containers.last().is_some_and(|c| !c.first_used) {
                    self.emit(Vec::new());
                }
                self.containers.pop();
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.render_table(t);
                }
                self.pending_blank = true;
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                if let Some(t) = &mut self.table {
                    let cells = std::mem::take(&mut t.cur);
                    t.rows.push((tag == TagEnd::TableHead, cells));
                }
            }
            TagEnd::TableCell => {
                let cell = std::mem::take(&mut self.inline);
                if let Some(t) = &mut self.table {
                    t.cur.push(cell);
                }
            }
            TagEnd::Emphasis
            | TagEnd::Strong
            | TagEnd::Strikethrough
            | TagEnd::Superscript
            | TagEnd::Subscript => {
                self.styles.pop();
            }
            TagEnd::Link | TagEnd::Image => {
                let style = self.current_style();
                self.styles.pop();
                if let Some((url, start, image)) = self.links.pop() {
                    if image {
                        self.inline.push(("]".into(), style));
                    }
                    let text: String = self.inline[start.min(self.inline.len())..]
                        .iter()
                        .map(|(t, _)| t.as_str())
                        .collect();
                    let same = url == text || url.strip_prefix("mailto:") == Some(text.as_str());
                    if !url.is_empty() && (image || !same) {
                        let dim = self.current_style().patch(self.style(Role::Dim));
                        self.push_inline(&format!(" ({url})"), dim);
                    }
                }
            }
        }
    }

    fn code_block(&mut self, code: &str, lang: &str) {
        let avail = self.avail().saturating_sub(2).max(1);
        for line in highlight(code, lang, self.theme) {
            let mut spans = vec![Span::raw("  ")];
            spans.extend(cut(line.spans, avail, self.style(Role::Dim)));
            self.emit(spans);
        }
    }

    fn render_table(&mut self, t: Table) {
        let ncols = t.rows.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
        if ncols == 0 {
            return;
        }
        let cell_w = |c: &Vec<Seg>| c.iter().map(|(s, _)| s.width()).sum::<usize>();
        let mut widths = vec![0usize; ncols];
        for (_, row) in &t.rows {
            for (k, c) in row.iter().enumerate() {
                widths[k] = widths[k].max(cell_w(c));
            }
        }
        let total = widths.iter().sum::<usize>() + 3 * (ncols - 1);
        let strong = self.style(Role::Strong);
        let sep = self.style(Role::Rule);
        let avail = self.avail();
        for (header, row) in &t.rows {
            let cells = (0..ncols).map(|k| {
                let segs: Vec<Seg> = row.get(k).cloned().unwrap_or_default();
                match header {
                    true => segs
                        .into_iter()
                        .map(|(s, st)| (s, st.patch(strong)))
                        .collect(),
                    false => segs,
                }
            });
            if total > avail {
                let mut segs: Vec<Seg> = Vec::new();
                for (k, cell) in cells.enumerate() {
                    if k > 0 {
                        segs.push((" │ ".into(), sep));
                    }
                    segs.extend(cell);
                }
                for line in wrap(&segs, avail) {
                    self.emit(line);
                }
                continue;
            }
            let mut spans = Vec::new();
            for (k, cell) in cells.enumerate() {
                if k > 0 {
                    spans.push(Span::styled(" │ ", sep));
                }
                let pad = widths[k].saturating_sub(cell_w(&cell));
                let (left, right) = match t.aligns.get(k) {
                    Some(Alignment::Right) => (pad, 0),
                    Some(Alignment::Center) => (pad / 2, pad - pad / 2),
                    _ => (0, pad),
                };
                spans.push(Span::raw(" ".repeat(left)));
                spans.extend(cell.into_iter().map(|(s, st)| Span::styled(s, st)));
                spans.push(Span::raw(" ".repeat(right)));
            }
            trim_end(&mut spans);
            self.emit(spans);
            if *header {
                let rule: Vec<String> = widths.iter().map(|w| "─".repeat(*w)).collect();
                self.emit(vec![Span::styled(rule.join("─┼─"), sep)]);
            }
        }
    }
}

#[cfg(test)]
mod tests;
