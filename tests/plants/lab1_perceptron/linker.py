# %% [hand-in]
(student_dir / LAB).mkdir(parents=True)  # the notebook: a link to the lab source
(student_dir / LAB / f"{LAB}.ipynb").symlink_to(LABS / "source" / LAB / f"{LAB}.ipynb")
