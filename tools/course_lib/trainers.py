"""The learner's own trainer (sNN_train_exercise), built once its stage's tasks pass, and run beside the
reference trainer (sNN_train_solution) on the same small work: the same model, data, seed, batch and number
of images, one epoch each. The figures are read from the trainers' --json files, as tools/compare.py reads
them (compare_lib/runs.py), so they mean what the comparison's figures mean: seconds of training (not the
test pass), scaled from the images trained to a whole epoch, and the test accuracy after those images."""
from . import build, common
from compare_lib import machine, stages as compare_stages  # noqa: E402
from compare_lib.runs import run_stage  # noqa: E402

SEED, BATCH, DATASET = 42, 64, "fashion-mnist"
# Images of the quick run: a few seconds at most on a 2-core machine (stage 01's MLP does ~20,000 images/s
# there, stage 02's CNN ~4,000 on one thread).
CPU_IMAGES = {"mlp": 10000, "cnn": 2000}
GPU_IMAGES = 10000
ROUNDS = 2


def stage_info(stage):
    found = [s for s in compare_stages.all_stages(common.ROOT) if s.id == stage]
    return found[0] if found else None


def race_plan(stage):
    """(compare_lib Stage, model, images) of the quick run of a stage: its CNN where it has one (the model its
    lesson is about), else the MLP."""
    info = stage_info(stage)
    if info is None:
        return None
    model = "cnn" if info.can_run("cnn") else "mlp"
    images = GPU_IMAGES if info.gpu else CPU_IMAGES[model]
    return info, model, images


def build_trainer(stage, track="exercise"):
    """Builds sNN_train_<track>; (ok, its path or the compiler's first errors)."""
    target = common.trainer_target(stage, track)
    ok, out = build.build_targets([target])
    return ok, (common.bin_path(target) if ok else build.compiler_errors(out))


def race(stage, indent="  "):
    """Builds both trainers of a stage, runs them on the same work and prints both, the ratio and the accuracies.
    Returns True when the learner's trainer trained."""
    plan = race_plan(stage)
    if plan is None:
        return False
    info, model, images = plan
    for track in ("exercise", "solution"):
        ok, what = build_trainer(stage, track)
        if not ok:
            print(f"{indent}{common.trainer_target(stage, track)} does not build:")
            for l in what:
                print(f"{indent}  {l}")
            return False
    out_dir = common.build_dir() / "course" / "trainers"
    runs = {"exercise": [], "solution": []}
    # Watched from here, after both builds: what the build just did is not other programs' load.
    watch = machine.CpuWatch()
    for _ in range(ROUNDS):  # alternated, so that a burst of other work slows both alike
        for track in ("exercise", "solution"):
            r = run_stage(common.ROOT, common.build_dir(), info, model, out_dir=out_dir, epochs=1, batch=BATCH,
                          limit=images, seed=SEED, dataset=DATASET, track=track, timeout=600, tag=f"_{track}")
            runs[track].append(r)
            if r.status != "ok":
                break
    others, watched = watch.other_cores()
    mine, ref = (min(rs, key=lambda r: (r.status != "ok", r.seconds_per_epoch)) for rs in runs.values())
    data = "the synthetic set" if mine.synthetic or ref.synthetic else (mine.dataset or ref.dataset or DATASET)
    print(f"{indent}your trainer against the reference, the same work: {model}, {data}, the first {images:,} "
          f"training images, 1 epoch, seed {SEED}, batch {BATCH}; the faster of {ROUNDS} runs each, alternated:")
    for name, r in (("yours", mine), ("reference", ref)):
        path = common.rel(common.bin_path(common.trainer_target(stage, 'exercise' if name == 'yours' else 'solution')))
        if r.status == "ok":
            print(f"{indent}  {name:9}  {r.seconds_per_epoch:7.2f} s/epoch  {r.images_per_second:9,.0f} img/s  "
                  f"test accuracy {100 * r.test_accuracy:.2f}%   {path}")
        else:
            print(f"{indent}  {name:9}  {r.status}: {r.reason}   {path}")
    if mine.status == "ok" and ref.status == "ok":
        ratio = mine.seconds_per_epoch / ref.seconds_per_epoch
        scaled = f"timed on {mine.images:,} images, scaled to the {mine.images_per_epoch:,} of an epoch; " \
            if mine.scaled else ""
        print(f"{indent}  yours / reference: {ratio:.2f}x the time per epoch ({scaled}training only, not the test "
              "pass; the accuracies are after those images)")
        warning = machine.busy_warning(others, machine.usable_cores(), watched)
        if warning:
            print(f"{indent}  {warning}")
    print(f"{indent}  the whole comparison of your trainers: tools/course compare --track exercise")
    return mine.status == "ok"
