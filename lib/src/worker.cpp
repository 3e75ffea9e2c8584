// placeholder: implemented in the core engine commit
