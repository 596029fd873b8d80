# %% [hand-in]
(others / "folder" / LAB).mkdir(parents=True)  # a solved notebook elsewhere
(others / "folder" / LAB / f"{LAB}.ipynb").write_text(json.dumps(solved()))
student_dir.symlink_to(others / "folder")  # the student folder: a link to it
