# %% [markdown] ex4-answer
# My answer.
#
# <img src=x onerror=alert(1)> <script>alert(2)</script>
# <svg onload=alert(3)></svg> <iframe src=javascript:alert(4)></iframe>
#
# [a link](javascript:alert(5)) ![pic](javascript:alert(6))
# <a href='JaVaScript:alert(7)'>b</a>
#
# ```
# code
#
# [x](javascript:alert(8))
# ```
