//! Cost of one frame of the app while an answer streams, after transcripts
//! of different lengths went to the scrollback: it should not grow with the
//! transcript, since finished cells are printed once and never redrawn.
//!
//! `cargo bench -p rein-tui --bench frame`

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use rein_core::Event;
use rein_tui::app::{App, Status};
use rein_tui::history::InputHistory;
use rein_tui::render;
use rein_tui::theme::{ColorLevel, Theme};

const ANSWER: &str = "## Plan\n\nFirst I will read `src/lib.rs` and the tests, then fix the \
parser so that an empty input is an error instead of a panic.\n\n- read the code\n- write a \
test\n- fix it\n\n```rust\nfn parse(input: &str) -> Result<Ast, Error> {\n    if input.is_empty() \
{\n        return Err(Error::Empty);\n    }\n    todo!()\n}\n```\n\nThe change is small and";

fn app_after(cells: usize) -> App {
    let dir = std::env::temp_dir().join("rein-bench-frame");
    let history = InputHistory::load(dir.join("history.jsonl"));
    let mut app = App::new(
        Theme::with_level(ColorLevel::TrueColor),
        dir,
        history,
        Status::default(),
    );
    // A transcript of `cells` finished answers, printed and handed over to
    // the scrollback the way the runtime does it.
    for i in 0..cells {
        app.on_event(Event::TextDelta {
            text: format!("Answer number {i} with **some** text.\n\n"),
        });
        let done = app.drain_inserts();
        black_box(render::transcript_lines(&done, 120, &app.theme));
    }
    app.on_event(Event::TextDelta {
        text: ANSWER.to_string(),
    });
    for id in 0..3 {
        app.on_event(Event::ToolStarted {
            call_id: format!("c{id}"),
            name: "bash".into(),
            arguments: r#"{"command": "cargo test --workspace"}"#.into(),
        });
    }
    app
}

fn frame(c: &mut Criterion) {
    let mut group = c.benchmark_group("frame");
    for cells in [10usize, 1_000, 10_000] {
        let mut app = app_after(cells);
        let mut term = Terminal::new(TestBackend::new(120, 40)).unwrap_or_else(|_| unreachable!());
        group.bench_function(format!("key_and_draw_after_{cells}_cells"), |b| {
            b.iter(|| {
                app.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
                app.on_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
                app.on_tick();
                term.draw(|f| render::draw(&app, f))
                    .map(|_| ())
                    .unwrap_or_else(|_| unreachable!());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, frame);
criterion_main!(benches);
