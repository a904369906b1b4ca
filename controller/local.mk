# controller/: filled in by the controller work
