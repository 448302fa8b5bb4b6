//! From brush-parser's syntax tree to [`ParsedCommand`]: every simple
//! command, wherever it is, with its words quote-removed.

use std::ops::Range;

use brush_parser::ParserOptions;
use brush_parser::ast;

use super::bounded::parse_program;
use super::words::{self, Rendered};
use super::{
    CommandMeta, Dyn, FunctionDef, ParsedCommand, Redirect, RedirectOp, ShellParseError,
    SimpleCommand, wrappers,
};

/// How deep compound commands and substitutions may nest.
pub(crate) const MAX_DEPTH: usize = 64;

/// Parse and walk on the current thread.
pub(crate) fn walk(command: &str) -> Result<ParsedCommand, ShellParseError> {
    let mut walker = Walker {
        out: ParsedCommand::default(),
        opts: ParserOptions::default(),
    };
    let program = parse_program(command, &walker.opts)?;
    let ctx = Ctx {
        src: command,
        depth: 0,
        parent: None,
        background: false,
        subshell: false,
    };
    walker.program(&program, ctx)?;
    Ok(walker.out)
}

#[derive(Clone, Copy)]
struct Ctx<'s> {
    /// The text being walked (a substitution's own text when inside one).
    src: &'s str,
    depth: usize,
    parent: Option<usize>,
    background: bool,
    /// Runs in a subshell: a `cd` there does not last.
    subshell: bool,
}

impl Ctx<'_> {
    fn deeper(self) -> Result<Self, ShellParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(ShellParseError::TooDeep);
        }
        Ok(Self {
            depth: self.depth + 1,
            ..self
        })
    }
}

/// Something inside a word to walk once its command has an index.
enum Pending<'t> {
    Text(String),
    Tree(&'t ast::SubshellCommand),
}

struct Walker {
    out: ParsedCommand,
    opts: ParserOptions,
}

type Res = Result<(), ShellParseError>;

impl Walker {
    fn program(&mut self, program: &ast::Program, ctx: Ctx<'_>) -> Res {
        for list in &program.complete_commands {
            self.list(list, ctx)?;
        }
        Ok(())
    }

    fn list(&mut self, list: &ast::CompoundList, ctx: Ctx<'_>) -> Res {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            let background = ctx.background || matches!(sep, ast::SeparatorOperator::Async);
            let ctx = Ctx {
                background,
                subshell: ctx.subshell || background,
                ..ctx
            };
            self.pipeline(&and_or.first, ctx)?;
            for next in &and_or.additional {
                let (ast::AndOr::And(p) | ast::AndOr::Or(p)) = next;
                self.pipeline(p, ctx)?;
            }
        }
        Ok(())
    }

    fn pipeline(&mut self, pipeline: &ast::Pipeline, ctx: Ctx<'_>) -> Res {
        let mut stages: Vec<Range<usize>> = Vec::new();
        let ctx = Ctx {
            subshell: ctx.subshell || pipeline.seq.len() > 1,
            ..ctx
        };
        for command in &pipeline.seq {
            let start = self.out.commands.len();
            self.command(command, ctx)?;
            let end = self.out.commands.len();
            if end > start {
                stages.push(start..end);
            }
        }
        if stages.len() > 1 {
            for range in &stages {
                for meta in &mut self.out.meta[range.clone()] {
                    meta.piped = true;
                }
            }
        }
        if !stages.is_empty() {
            self.out
                .pipelines
                .push(stages.iter().map(|r| r.start).collect());
            self.out.stages.push(stages);
        }
        Ok(())
    }

    fn command(&mut self, command: &ast::Command, ctx: Ctx<'_>) -> Res {
        match command {
            ast::Command::Simple(simple) => self.simple(simple, ctx),
            ast::Command::Compound(compound, redirects) => {
                let start = self.out.commands.len();
                self.compound(compound, ctx.deeper()?)?;
                self.attach_redirects(redirects.as_ref(), start, ctx)
            }
            ast::Command::Function(def) => {
                self.out.opaque = true;
                let start = self.out.commands.len();
                let ast::FunctionBody(body, redirects) = &def.body;
                let body_ctx = Ctx {
                    subshell: true,
                    ..ctx.deeper()?
                };
                self.compound(body, body_ctx)?;
                self.attach_redirects(redirects.as_ref(), start, ctx)?;
                let name = words::render(&def.fname.value, &self.opts).text;
                self.out.functions.push(FunctionDef {
                    name,
                    body: start..self.out.commands.len(),
                });
                Ok(())
            }
            ast::Command::ExtendedTest(test, redirects) => {
                let start = self.out.commands.len();
                self.extended_test(&test.expr, ctx)?;
                self.attach_redirects(redirects.as_ref(), start, ctx)
            }
        }
    }

    fn compound(&mut self, compound: &ast::CompoundCommand, ctx: Ctx<'_>) -> Res {
        use ast::CompoundCommand as C;
        match compound {
            C::Arithmetic(a) => {
                self.loose_text(&a.expr.value, ctx)?;
                // brush reads `( (cmd) )` as `((cmd))`; bash runs it as
                // nested subshells. Unless `((` and `))` are written
                // together, take the inside as commands.
                let written = char_slice(ctx.src, a.loc.start.index, a.loc.end.index);
                let arithmetic = written.is_some_and(|t| t.starts_with("((") && t.ends_with("))"));
                let commands = (!arithmetic)
                    .then(|| parse_program(&a.expr.value, &self.opts).ok())
                    .flatten();
                if let Some(program) = commands {
                    self.program(
                        &program,
                        Ctx {
                            src: &a.expr.value,
                            ..ctx.deeper()?
                        },
                    )?;
                }
                Ok(())
            }
            C::ArithmeticForClause(f) => {
                for e in [&f.initializer, &f.condition, &f.updater]
                    .into_iter()
                    .flatten()
                {
                    self.loose_text(&e.value, ctx)?;
                }
                self.list(&f.body.list, ctx)
            }
            C::BraceGroup(b) => self.list(&b.list, ctx),
            C::Subshell(s) => self.list(
                &s.list,
                Ctx {
                    subshell: true,
                    ..ctx
                },
            ),
            C::ForClause(f) => {
                for w in f.values.iter().flatten() {
                    self.loose_word(&w.value, ctx)?;
                }
                self.list(&f.body.list, ctx)
            }
            C::CaseClause(c) => {
                self.loose_word(&c.value.value, ctx)?;
                for item in &c.cases {
                    for p in &item.patterns {
                        self.loose_word(&p.value, ctx)?;
                    }
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd, ctx)?;
                    }
                }
                Ok(())
            }
            C::IfClause(i) => {
                self.list(&i.condition, ctx)?;
                self.list(&i.then, ctx)?;
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond, ctx)?;
                    }
                    self.list(&e.body, ctx)?;
                }
                Ok(())
            }
            C::WhileClause(w) | C::UntilClause(w) => {
                self.list(&w.0, ctx)?;
                self.list(&w.1.list, ctx)
            }
            C::Coprocess(c) => self.command(
                &c.body,
                Ctx {
                    subshell: true,
                    ..ctx
                },
            ),
        }
    }

    /// `[[ … ]]`: only the substitutions in its words run commands.
    fn extended_test(&mut self, expr: &ast::ExtendedTestExpr, ctx: Ctx<'_>) -> Res {
        use ast::ExtendedTestExpr as E;
        let mut todo = vec![expr];
        while let Some(e) = todo.pop() {
            match e {
                E::And(a, b) | E::Or(a, b) => {
                    todo.push(b);
                    todo.push(a);
                }
                E::Not(a) | E::Parenthesized(a) => todo.push(a),
                E::UnaryTest(_, w) => self.loose_word(&w.value, ctx)?,
                E::BinaryTest(_, a, b) => {
                    self.loose_word(&a.value, ctx)?;
                    self.loose_word(&b.value, ctx)?;
                }
            }
        }
        Ok(())
    }

    /// A word that belongs to no simple command: walk its substitutions.
    fn loose_word(&mut self, raw: &str, ctx: Ctx<'_>) -> Res {
        let r = words::render(raw, &self.opts);
        self.unanalysed(r.unanalysed);
        self.substitutions(r.subs.into_iter().map(Pending::Text).collect(), ctx)
    }

    /// Arithmetic text: it may hold `$(…)` too.
    fn loose_text(&mut self, text: &str, ctx: Ctx<'_>) -> Res {
        let r = words::render(&format!("$(({text}))"), &self.opts);
        self.unanalysed(r.unanalysed);
        self.substitutions(r.subs.into_iter().map(Pending::Text).collect(), ctx)
    }

    fn substitutions(&mut self, pending: Vec<Pending<'_>>, ctx: Ctx<'_>) -> Res {
        if pending.is_empty() {
            return Ok(());
        }
        let ctx = Ctx {
            subshell: true,
            ..ctx.deeper()?
        };
        for p in pending {
            match p {
                Pending::Text(text) => {
                    let program = parse_program(&text, &self.opts)?;
                    self.program(&program, Ctx { src: &text, ..ctx })?;
                }
                Pending::Tree(sub) => self.list(&sub.list, ctx)?,
            }
        }
        Ok(())
    }

    fn simple(&mut self, simple: &ast::SimpleCommand, ctx: Ctx<'_>) -> Res {
        use ast::CommandPrefixOrSuffixItem as Item;
        let mut cmd = SimpleCommand::default();
        let mut meta = CommandMeta {
            parent: ctx.parent,
            background: ctx.background,
            subshell: ctx.subshell,
            ..CommandMeta::default()
        };
        let mut pending: Vec<Pending<'_>> = Vec::new();
        let prefix = simple.prefix.iter().flat_map(|p| p.0.iter());

        let suffix = simple.suffix.iter().flat_map(|s| s.0.iter());
        for item in prefix {
            match item {
                Item::AssignmentWord(assignment, _) => {
                    let text = self.assignment(assignment, &mut pending);
                    cmd.assignments.push(text);
                }
                other => self.item(other, ctx, &mut cmd, &mut meta, &mut pending),
            }
        }
        if let Some(word) = &simple.word_or_name {
            let r = words::render(&word.value, &self.opts);
            self.push_word(r, &mut cmd, &mut meta, &mut pending);
        }
        for item in suffix {
            self.item(item, ctx, &mut cmd, &mut meta, &mut pending);
        }
        cmd.dynamic = meta.argv_dyn.iter().any(|d| *d != Dyn::Static)
            || cmd
                .redirects
                .iter()
                .zip(&meta.redirect_dyn)
                .any(|(r, d)| r.op != RedirectOp::HereDoc && *d != Dyn::Static);
        self.out.opaque |= wrappers::is_opaque(&cmd.argv, &meta.argv_dyn);
        let index = self.out.commands.len();
        self.out.commands.push(cmd);
        self.out.meta.push(meta);
        self.substitutions(
            pending,
            Ctx {
                parent: Some(index),
                ..ctx
            },
        )
    }

    fn item<'t>(
        &mut self,
        item: &'t ast::CommandPrefixOrSuffixItem,
        ctx: Ctx<'_>,
        cmd: &mut SimpleCommand,
        meta: &mut CommandMeta,
        pending: &mut Vec<Pending<'t>>,
    ) {
        use ast::CommandPrefixOrSuffixItem as Item;
        match item {
            Item::Word(w) | Item::AssignmentWord(_, w) => {
                let r = words::render(&w.value, &self.opts);
                self.push_word(r, cmd, meta, pending);
            }
            Item::IoRedirect(r) => {
                let (redirect, d) = self.redirect(r, ctx, pending);
                cmd.redirects.push(redirect);
                meta.redirect_dyn.push(d);
            }
            Item::ProcessSubstitution(kind, sub) => {
                cmd.argv.push(process_substitution_text(kind, sub, ctx.src));
                meta.argv_dyn.push(Dyn::Runtime);
                pending.push(Pending::Tree(sub));
            }
        }
    }

    fn push_word(
        &mut self,
        r: Rendered,
        cmd: &mut SimpleCommand,
        meta: &mut CommandMeta,
        pending: &mut Vec<Pending<'_>>,
    ) {
        self.unanalysed(r.unanalysed);
        cmd.argv.push(r.text);
        meta.argv_dyn.push(r.dyn_);
        pending.extend(r.subs.into_iter().map(Pending::Text));
    }

    fn assignment(&mut self, a: &ast::Assignment, pending: &mut Vec<Pending<'_>>) -> String {
        let mut take = |raw: &str| self.word(raw, pending).0;
        let name = match &a.name {
            ast::AssignmentName::VariableName(n) => n.clone(),
            ast::AssignmentName::ArrayElementName(n, index) => format!("{n}[{}]", take(index)),
        };
        let value = match &a.value {
            ast::AssignmentValue::Scalar(w) => take(&w.value),
            ast::AssignmentValue::Array(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|(key, w)| match key {
                        Some(k) => format!("[{}]={}", take(&k.value), take(&w.value)),
                        None => take(&w.value),
                    })
                    .collect();
                format!("({})", parts.join(" "))
            }
        };
        let op = if a.append { "+=" } else { "=" };
        format!("{name}{op}{value}")
    }

    fn redirect<'t>(
        &mut self,
        redirect: &'t ast::IoRedirect,
        ctx: Ctx<'_>,
        pending: &mut Vec<Pending<'t>>,
    ) -> (Redirect, Dyn) {
        use ast::{IoFileRedirectKind as K, IoFileRedirectTarget as T};
        let (op, (target, d)) = match redirect {
            ast::IoRedirect::File(_, kind, target) => {
                let op = match kind {
                    K::Read => RedirectOp::Read,
                    K::Write | K::Clobber => RedirectOp::Write,
                    K::Append => RedirectOp::Append,
                    K::ReadAndWrite => RedirectOp::ReadWrite,
                    K::DuplicateInput | K::DuplicateOutput => RedirectOp::DupFd,
                };
                match target {
                    T::Filename(w) => (op, self.word(&w.value, pending)),
                    T::Fd(fd) => (RedirectOp::DupFd, (fd.to_string(), Dyn::Static)),
                    T::ProcessSubstitution(kind, sub) => {
                        pending.push(Pending::Tree(sub));
                        let text = process_substitution_text(kind, sub, ctx.src);
                        (op, (text, Dyn::Runtime))
                    }
                    T::Duplicate(w) => {
                        let (text, d) = self.word(&w.value, pending);
                        let fd = text.trim_end_matches('-');
                        if fd.is_empty() || fd.bytes().all(|b| b.is_ascii_digit()) {
                            (RedirectOp::DupFd, (text, d))
                        } else if matches!(kind, K::DuplicateOutput) {
                            // `>&file` is `&>file`.
                            (RedirectOp::Write, (text, d))
                        } else {
                            (RedirectOp::Read, (text, d))
                        }
                    }
                }
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                let body = if doc.requires_expansion {
                    let r = words::render_heredoc(&doc.doc.value, &self.opts);
                    self.unanalysed(r.unanalysed);
                    pending.extend(r.subs.into_iter().map(Pending::Text));
                    (r.text, r.dyn_)
                } else {
                    (doc.doc.value.clone(), Dyn::Static)
                };
                (RedirectOp::HereDoc, body)
            }
            ast::IoRedirect::HereString(_, w) => {
                (RedirectOp::HereString, self.word(&w.value, pending))
            }
            ast::IoRedirect::OutputAndError(w, append) => {
                let op = if *append {
                    RedirectOp::Append
                } else {
                    RedirectOp::Write
                };
                (op, self.word(&w.value, pending))
            }
        };
        (Redirect { op, target }, d)
    }

    /// Part of a word could not be analysed: it may hide commands.
    fn unanalysed(&mut self, yes: bool) {
        self.out.opaque |= yes;
        self.out.unanalysed |= yes;
    }

    /// A redirect word: its text and how dynamic it is.
    fn word(&mut self, raw: &str, pending: &mut Vec<Pending<'_>>) -> (String, Dyn) {
        let r = words::render(raw, &self.opts);
        self.unanalysed(r.unanalysed);
        pending.extend(r.subs.into_iter().map(Pending::Text));
        (r.text, r.dyn_)
    }

    /// Redirections of a compound command or function body: they apply to
    /// every command inside it.
    fn attach_redirects(
        &mut self,
        list: Option<&ast::RedirectList>,
        start: usize,
        ctx: Ctx<'_>,
    ) -> Res {
        let Some(list) = list else { return Ok(()) };
        let end = self.out.commands.len();
        let mut pending = Vec::new();
        for r in &list.0 {
            let (redirect, d) = self.redirect(r, ctx, &mut pending);
            for i in start..end {
                if redirect.op != RedirectOp::HereDoc && d != Dyn::Static {
                    self.out.commands[i].dynamic = true;
                }
                self.out.commands[i].redirects.push(redirect.clone());
                self.out.meta[i].redirect_dyn.push(d);
            }
        }
        self.substitutions(pending, ctx)
    }
}

/// `<(…)` / `>(…)` as written.
fn process_substitution_text(
    kind: &ast::ProcessSubstitutionKind,
    sub: &ast::SubshellCommand,
    src: &str,
) -> String {
    let sign = match kind {
        ast::ProcessSubstitutionKind::Read => '<',
        ast::ProcessSubstitutionKind::Write => '>',
    };
    let written = char_slice(src, sub.loc.start.index, sub.loc.end.index)
        .filter(|t| t.starts_with('(') && t.ends_with(')'));
    match written {
        Some(text) => format!("{sign}{text}"),
        None => format!("{sign}({})", sub.list),
    }
}

/// `src` between two character indexes (brush counts characters).
fn char_slice(src: &str, start: usize, end: usize) -> Option<&str> {
    let byte = |char_index: usize| {
        src.char_indices()
            .map(|(b, _)| b)
            .chain(std::iter::once(src.len()))
            .nth(char_index)
    };
    src.get(byte(start)?..byte(end)?)
}
