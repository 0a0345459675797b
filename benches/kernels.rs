//! Kernel timings without Python: `cargo bench --bench kernels`.
//! Prints each kernel's median time and its ratio to one plain sum over the same array (the
//! memory-read floor), both measured in this process.

use calibkit::kernels::core::validate::Checks;
use calibkit::kernels::{self, Binning, GceSpec, Grouping, Inputs, Norm, Score};
use std::time::Instant;

fn softmaxish(n: usize, k: usize, seed: u64) -> (Vec<f64>, Vec<i64>) {
    let mut s = seed;
    let mut rnd = move || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s >> 11) as f64 / (1u64 << 53) as f64
    };
    let mut p = vec![0.0; n * k];
    let mut y = vec![0i64; n];
    for i in 0..n {
        let row = &mut p[i * k..(i + 1) * k];
        let mut tot = 0.0;
        for v in row.iter_mut() {
            let u: f64 = rnd();
            *v = (6.0 * (u - 0.5) * 3.0).exp();
            tot += *v;
        }
        row.iter_mut().for_each(|v| *v /= tot);
        y[i] = ((rnd() * k as f64) as i64).min(k as i64 - 1);
    }
    (p, y)
}

fn median<F: FnMut()>(mut f: F, reps: usize) -> f64 {
    let mut t: Vec<f64> = (0..reps)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64()
        })
        .collect();
    t.sort_by(|a, b| a.partial_cmp(b).unwrap());
    t[reps / 2]
}

fn run<T: Score>(name: &str, p: &[T], y: &[i64], k: usize) {
    let x = Inputs::new(p, y, k).unwrap();
    let floor = median(|| {
        let s: f64 = p.iter().map(|v| v.to_f64()).sum();
        std::hint::black_box(s);
    }, 7);
    println!("{name}: sum {:.2} ms", floor * 1e3);
    let metrics = [
        ("ece", Binning::Even, true, false, 0.0, Norm::L1),
        ("cce", Binning::Even, true, true, 0.0, Norm::L1),
        ("sce", Binning::Even, false, true, 0.0, Norm::L1),
        ("ace", Binning::Adaptive, false, true, 0.0, Norm::L1),
        ("tace", Binning::Adaptive, false, true, 0.01, Norm::L1),
        ("rmsce", Binning::Adaptive, true, false, 0.0, Norm::L2),
        ("pooled-adaptive", Binning::Adaptive, false, false, 0.0, Norm::L1),
    ];
    for (m, binning, max_prob, class_conditional, threshold, norm) in metrics {
        let spec = GceSpec {
            grouping: Grouping { binning, max_prob, class_conditional, threshold },
            norm,
            num_bins: 15,
        };
        let t = median(|| {
            std::hint::black_box(kernels::gce(&x, &spec, &Checks::ALL).unwrap());
        }, 5);
        println!("  {m:>16}: {:8.2} ms  {:6.2}x sum", t * 1e3, t / floor);
    }
}

fn main() {
    let shapes: Vec<(usize, usize)> = std::env::args()
        .skip(1)
        .filter(|a| a.contains('x'))
        .map(|a| {
            let v: Vec<usize> = a.split('x').map(|s| s.parse().unwrap()).collect();
            (v[0], v[1])
        })
        .collect();
    let shapes = if shapes.is_empty() { vec![(50_000, 1000), (1_000_000, 10), (10_000, 10)] } else { shapes };
    for (n, k) in shapes {
        let (p, y) = softmaxish(n, k, 42);
        run(&format!("N={n} K={k} f64"), &p, &y, k);
        let p32: Vec<f32> = p.iter().map(|&v| v as f32).collect();
        // Renormalising in f32 is unnecessary: the tolerance covers the rounding.
        run(&format!("N={n} K={k} f32"), &p32, &y, k);
    }
}
