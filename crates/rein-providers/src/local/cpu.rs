//! How many threads to run the model on.

use std::collections::HashSet;

/// Physical cores usable by this process: distinct (physical id, core id)
/// pairs in /proc/cpuinfo, capped by the CPUs this process may use; the
/// number of usable CPUs when /proc/cpuinfo says nothing.
pub(crate) fn physical_cores() -> usize {
    let usable = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    let counted = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| count_physical_cores(&text));
    match counted {
        Some(n) => n.min(usable).max(1),
        None => usable,
    }
}

/// Distinct (physical id, core id) pairs; None when the text has none.
pub(crate) fn count_physical_cores(cpuinfo: &str) -> Option<usize> {
    let mut cores = HashSet::new();
    let mut physical: Option<String> = None;
    let mut core: Option<String> = None;
    let mut flush = |physical: &mut Option<String>, core: &mut Option<String>| {
        if let Some(c) = core.take() {
            cores.insert((physical.take().unwrap_or_default(), c));
        }
        *physical = None;
    };
    for line in cpuinfo.lines() {
        if line.trim().is_empty() {
            flush(&mut physical, &mut core);
            continue;
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        match key.trim() {
            "processor" => flush(&mut physical, &mut core),
            "physical id" => physical = Some(value.trim().to_string()),
            "core id" => core = Some(value.trim().to_string()),
            _ => {}
        }
    }
    flush(&mut physical, &mut core);
    if cores.is_empty() {
        None
    } else {
        Some(cores.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hyperthreads_count_once() {
        let info = "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n\n\
                    processor\t: 2\nphysical id\t: 0\ncore id\t\t: 0\n\n\
                    processor\t: 3\nphysical id\t: 0\ncore id\t\t: 1\n";
        assert_eq!(count_physical_cores(info), Some(2));
    }

    #[test]
    fn sockets_are_told_apart() {
        let info = "processor : 0\nphysical id : 0\ncore id : 0\n\n\
                    processor : 1\nphysical id : 1\ncore id : 0\n";
        assert_eq!(count_physical_cores(info), Some(2));
    }

    #[test]
    fn no_core_ids_means_unknown() {
        assert_eq!(count_physical_cores("processor : 0\nBogoMIPS : 50\n"), None);
        assert!(physical_cores() >= 1);
    }
}
