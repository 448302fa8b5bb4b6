//! Tests of the nudges.

#![allow(clippy::unwrap_used)]
use super::*;

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.csv"), "a\n1\n").unwrap();
    std::fs::write(dir.path().join("calc.py"), "def f(): pass\n").unwrap();
    dir
}

#[test]
fn an_answer_about_a_file_never_opened_is_nudged_once() {
    let ws = workspace();
    let mut looked = Looked::default();
    let answer = "data.csv has 3 rows.";
    let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
    assert!(n.contains("data.csv without opening it"), "{n}");
    looked.nudged.push(kind);
    assert_eq!(nudge(answer, &looked, ws.path()), None);
}

/// A file is named by a call only as a whole name: running
/// `test_calc.py` did not open `calc.py`.
#[test]
fn a_file_named_only_inside_another_name_was_not_read() {
    let ws = workspace();
    let mut looked = Looked::default();
    looked.saw(r#"{"command":"python3 test_calc.py"}"#);
    let (kind, _) = nudge("The bug is in calc.py.", &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::UnreadFile);
    looked.saw(r#"{"path":"./calc.py"}"#);
    assert_eq!(nudge("The bug is in calc.py.", &looked, ws.path()), None);
    assert!(names_file("cat calc.py.", "calc.py"));
    assert!(!names_file("mycalc.py", "calc.py"));
    assert!(!names_file("calc.pyc", "calc.py"));
}

/// grep listed `billing/builder.py:1:class InvoiceBuilder:` and the
/// model answered with that path: no nudge to open it (told to, the
/// 1.5B model read it and answered with what the class does).
#[test]
fn an_answer_naming_a_file_a_search_listed_is_left_alone() {
    let ws = workspace();
    let mut looked = Looked::default();
    looked.saw(r#"{"pattern":"def f"}"#);
    looked.listed("calc.py:1:def f(): pass\n[1 matching line]");
    assert_eq!(nudge("f is defined in calc.py.", &looked, ws.path()), None);
    // Code shown for it is still a guess: read it first.
    let answer = "Fix calc.py like this:\n```python\ndef f():\n    return 1\n```";
    let (kind, _) = nudge(answer, &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::GuessedChange);
}

#[test]
fn an_answer_about_a_file_that_was_read_is_left_alone() {
    let ws = workspace();
    let mut looked = Looked::default();
    looked.saw(r#"{"path":"data.csv"}"#);
    assert_eq!(nudge("`data.csv` has 1 row.", &looked, ws.path()), None);
}

#[test]
fn code_shown_for_a_file_that_was_not_changed_is_nudged_to_be_applied() {
    let ws = workspace();
    let mut looked = Looked::default();
    looked.saw(r#"{"path":"calc.py"}"#);
    let answer = "Fix calc.py like this:\n```python\ndef f():\n    return 1\n```";
    let (_, n) = nudge(answer, &looked, ws.path()).unwrap();
    assert!(n.contains("shows code for calc.py"), "{n}");
    assert!(!n.contains("not read"), "{n}");
    looked.wrote = true;
    assert_eq!(nudge(answer, &looked, ws.path()), None);
}

#[test]
fn an_answer_right_after_a_refused_call_is_not_nudged_to_retry_it() {
    let ws = workspace();
    let looked = Looked {
        last_round_denied: true,
        ..Default::default()
    };
    // Not even for the code it shows: the change was refused.
    let answer = "I could not edit calc.py: ```py\nreturn 1\n```";
    assert_eq!(nudge(answer, &looked, ws.path()), None);
}

#[test]
fn an_answer_right_after_a_failed_call_is_nudged_to_try_again() {
    let ws = workspace();
    let looked = Looked {
        last_round_failed: true,
        ..Looked::default()
    };
    let (_, n) = nudge("It is MIT.", &looked, ws.path()).unwrap();
    assert!(n.contains("last tool call failed"), "{n}");
}

/// A fix guessed for a file never read: read it first. Then, after
/// the edit fails, the failed call gets its own nudge: each kind once.
#[test]
fn each_kind_of_nudge_comes_once_and_a_guessed_fix_is_told_to_read_first() {
    let ws = workspace();
    let mut looked = Looked::default();
    let answer = "The bug is in calc.py:\n```python\ndef f():\n    return 1\n```";
    let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::GuessedChange);
    assert!(
        n.contains("you have not read it") && n.contains("read calc.py first"),
        "{n}"
    );
    looked.nudged.push(kind);
    looked.last_round_failed = true;
    let (kind, _) = nudge("The edit failed.", &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::FailedCall);
    looked.nudged.push(kind);
    // The same answer again: its kinds are spent, only the unread
    // file is left to say.
    looked.last_round_failed = false;
    let (kind, _) = nudge(answer, &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::UnreadFile);
    looked.nudged.push(kind);
    assert_eq!(nudge(answer, &looked, ws.path()), None);
    // Once it has read the file, the same code gets the other nudge:
    // make the change.
    looked.saw(r#"{"path":"calc.py"}"#);
    let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::UnappliedChange);
    assert!(n.contains("make it now"), "{n}");
    looked.nudged.push(kind);
    assert_eq!(nudge(answer, &looked, ws.path()), None);
}

#[test]
fn requests_for_a_change_are_told_from_questions() {
    for asked in [
        "Fix calc.py.",
        "The test suite fails: run python3 test_calc.py, find the bug and fix it.",
        "Run the tests, then update the README",
        "Please rename Usr to User.",
        "Add up the numbers and write the total to total.txt.",
    ] {
        assert!(asks_for_change(asked), "{asked}");
    }
    for question in [
        "What is the timeout set to?",
        "How many rows does data.csv have? Answer with the number.",
        "Which file defines the class that makes invoices?",
        "Read secret.txt and tell me the code word.",
    ] {
        assert!(!asks_for_change(question), "{question}");
    }
}

/// Asked for a change, the model read the file and explained the fix
/// in words: it is told once to make it. A file written by a command
/// counts as a change, so no nudge then.
#[test]
fn a_change_asked_for_and_never_made_is_nudged_once() {
    let ws = workspace();
    let mut looked = Looked {
        change_asked: Some(Snapshot::take(ws.path())),
        ..Looked::default()
    };
    looked.saw(r#"{"path":"calc.py"}"#);
    let answer = "The bug is in calc.py: f should return 1.";
    let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::UnmadeChange);
    assert!(n.contains("no file has changed"), "{n}");
    // calc.py was read: the next turn must change a file.
    assert_eq!(next_turn(kind, answer, &looked, ws.path()), NextTurn::Edit);
    let vague = "Nothing to do.";
    assert_eq!(next_turn(kind, vague, &looked, ws.path()), NextTurn::Call);
    looked.nudged.push(kind);
    assert_eq!(nudge(answer, &looked, ws.path()), None);

    // Running the tests is no change: a command ran, Python wrote its
    // bytecode cache, and the model answered with the fix undone (the
    // demo's failure on the 1.5B model).
    let ws = workspace();
    let mut looked = Looked {
        change_asked: Some(Snapshot::take(ws.path())),
        ..Looked::default()
    };
    looked.saw(r#"{"command":"python3 test_calc.py"}"#);
    looked.saw(r#"{"path":"calc.py"}"#);
    looked.wrote = true;
    std::fs::create_dir(ws.path().join("__pycache__")).unwrap();
    std::fs::write(ws.path().join("__pycache__/calc.cpython-311.pyc"), "x").unwrap();
    let (kind, _) = nudge("The mean divides by n - 1.", &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::UnmadeChange);

    let ws = workspace();
    let looked = Looked {
        change_asked: Some(Snapshot::take(ws.path())),
        ..Looked::default()
    };
    std::fs::write(ws.path().join("total.txt"), "3\n").unwrap();
    assert_eq!(nudge("The total is 3.", &looked, ws.path()), None);
}

/// Asked for `count.sh`, the model ran `wc -l` and answered with the
/// number (the suite's create-line-count-script): it is told to make
/// the file the request names, with only the tools that write.
#[test]
fn a_file_the_request_names_and_nobody_made_is_asked_for_by_name() {
    let ws = workspace();
    let prompt = "Write a bash script count.sh that prints the lines in data.csv.";
    let mut looked = Looked {
        change_asked: Some(Snapshot::take(ws.path())),
        asked_for: asked::missing_names(prompt, ws.path()),
        ..Looked::default()
    };
    looked.saw(r#"{"command":"wc -l < data.csv"}"#);
    looked.wrote = true;
    let answer = "data.csv has 2 lines.";
    let (kind, n) = nudge(answer, &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::MissingFile);
    assert!(n.contains("write_file at the path `count.sh`"), "{n}");
    assert_eq!(next_turn(kind, answer, &looked, ws.path()), NextTurn::Edit);
    // Made somewhere else (`project/count.sh`) it is still missing;
    // made where asked, nothing more is said.
    std::fs::create_dir(ws.path().join("project")).unwrap();
    std::fs::write(ws.path().join("project/count.sh"), "wc -l < data.csv\n").unwrap();
    assert_eq!(
        nudge(answer, &looked, ws.path()).unwrap().0,
        NudgeKind::MissingFile
    );
    std::fs::write(ws.path().join("count.sh"), "wc -l < data.csv\n").unwrap();
    assert_eq!(nudge(answer, &looked, ws.path()), None);
}

/// A rename made in one file of three: the places left are listed,
/// again while they drop, never when nothing moved.
#[test]
fn a_rename_with_the_old_name_still_used_is_nudged_while_it_makes_progress() {
    let ws = workspace();
    std::fs::write(ws.path().join("models.py"), "class User:\n    pass\n").unwrap();
    std::fs::write(
        ws.path().join("app.py"),
        "from models import Usr\nu = Usr()\n",
    )
    .unwrap();
    let prompt = "Rename the class Usr to User in every file that uses it.";
    let mut looked = Looked {
        change_asked: Some(Snapshot::take(ws.path())),
        rename: Rename::of(prompt),
        ..Looked::default()
    };
    let (kind, n) = nudge("Renamed.", &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::RenameLeftovers);
    assert!(
        n.contains("`Usr` is still used in 2 places")
            && n.contains("replace_all true")
            && n.contains("app.py:1: from models import Usr\napp.py:2: u = Usr()"),
        "{n}"
    );
    assert_eq!(
        next_turn(kind, "Renamed.", &looked, ws.path()),
        NextTurn::Edit
    );
    looked.nudged.push(kind);
    looked.rename_left = Some(2);
    // No progress: no second nudge of this kind.
    assert_ne!(
        nudge("Renamed.", &looked, ws.path()).map(|(k, _)| k),
        Some(NudgeKind::RenameLeftovers)
    );
    std::fs::write(
        ws.path().join("app.py"),
        "from models import User\nu = Usr()\n",
    )
    .unwrap();
    let (kind, n) = nudge("Renamed.", &looked, ws.path()).unwrap();
    assert_eq!(kind, NudgeKind::RenameLeftovers);
    assert!(n.contains("in 1 place."), "{n}");
    std::fs::write(
        ws.path().join("app.py"),
        "from models import User\nu = User()\n",
    )
    .unwrap();
    assert_eq!(nudge("Renamed.", &looked, ws.path()), None);
}

#[test]
fn names_outside_the_workspace_or_missing_are_never_looked_up() {
    let ws = workspace();
    let looked = Looked::default();
    for answer in [
        "See /etc/passwd.",
        "See ../data.csv and ../../etc/hosts.",
        "See missing.txt.",
        "No files here.",
    ] {
        assert_eq!(nudge(answer, &looked, ws.path()), None, "{answer}");
    }
}
